// SPDX-License-Identifier: MIT
// RunAgreement: how a multi-process communicator names what its processes disagree on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

#include "dptrain/core/communication.hpp"

using Catch::Matchers::Contains;

namespace {

// Two processes' agreements, reduced as a transport would: element-wise minimum and maximum.
void reduce_pair(dptrain::RunAgreement& a, dptrain::RunAgreement& b) {
  for (std::size_t i = 0; i < a.low().size(); ++i) {
    const std::uint64_t low = std::min(a.low()[i], b.low()[i]), high = std::max(a.high()[i], b.high()[i]);
    a.low()[i] = b.low()[i] = low;
    a.high()[i] = b.high()[i] = high;
  }
}

}  // namespace

TEST_CASE("RunAgreement: processes with the same run agree; one that differs is named on every process",
          "[communication]") {
  dptrain::RunSignature run{.parameters = 10, .samples = 100, .batch_size = 8, .epochs = 2};
  dptrain::RunAgreement same_a(run, "data set size", {{"Transport::level", 3}});
  dptrain::RunAgreement same_b(run, "data set size", {{"Transport::level", 3}});
  reduce_pair(same_a, same_b);
  CHECK_NOTHROW(same_a.check("dptrain::Transport"));

  dptrain::RunSignature other = run;
  other.batch_size = 16;
  dptrain::RunAgreement a(run, "data set size", {{"Transport::level", 3}});
  dptrain::RunAgreement b(other, "data set size", {{"Transport::level", 4}});
  reduce_pair(a, b);
  for (const dptrain::RunAgreement* agreement : {&a, &b})
    CHECK_THROWS_WITH(
        agreement->check("dptrain::Transport"),
        "dptrain::Transport: the ranks run different configurations: batch_size, Transport::level differ");
}

TEST_CASE("RunAgreement: a process that refused its run makes every process throw", "[communication]") {
  dptrain::RunSignature run{.parameters = 10, .samples = 100};
  dptrain::RunSignature refused = run;
  refused.refused = true;
  refused.batch_size = 99;  // a refusal is said first, whatever else differs
  dptrain::RunAgreement a(run, "data set size", {});
  dptrain::RunAgreement b(refused, "data set size", {});
  reduce_pair(a, b);
  CHECK_THROWS_WITH(a.check("dptrain::Transport"), Contains("another rank refused its model, data or options"));
  CHECK_THROWS_WITH(b.check("dptrain::Transport"), Contains("another rank refused"));
}
