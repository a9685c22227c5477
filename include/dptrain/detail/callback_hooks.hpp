// SPDX-License-Identifier: MIT
// Calls an optional hook on every callback that has it; a hook returning true asks to stop.
#pragma once

#include <concepts>
#include <type_traits>

namespace dptrain::detail {

// Each hook is a callable that exists for a callback exactly when the callback has that member,
// so std::invocable detects it.
inline constexpr auto on_fit_begin = [](auto& cb, auto& ctx) -> decltype(cb.on_fit_begin(ctx)) {
  return cb.on_fit_begin(ctx);
};
inline constexpr auto on_epoch_begin = [](auto& cb, auto& ctx) -> decltype(cb.on_epoch_begin(ctx)) {
  return cb.on_epoch_begin(ctx);
};
inline constexpr auto on_step_end = [](auto& cb, auto& ctx) -> decltype(cb.on_step_end(ctx)) {
  return cb.on_step_end(ctx);
};
inline constexpr auto on_epoch_end = [](auto& cb, auto& ctx) -> decltype(cb.on_epoch_end(ctx)) {
  return cb.on_epoch_end(ctx);
};
inline constexpr auto on_fit_end = [](auto& cb, auto& ctx) -> decltype(cb.on_fit_end(ctx)) {
  return cb.on_fit_end(ctx);
};

/// True if any of the callbacks has the hook.
template <class Hook, class Context, class... Callbacks>
inline constexpr bool has_hook = (std::invocable<const Hook&, Callbacks&, Context&> || ...);

/// Calls the hook on each callback that has it, in order; true if any returned true.
template <class Hook, class Context, class... Callbacks>
bool call_hook(const Hook& hook, Context& ctx, Callbacks&... callbacks) {
  bool stop = false;
  (
      [&] {
        if constexpr (std::invocable<const Hook&, Callbacks&, Context&>) {
          if constexpr (std::same_as<std::invoke_result_t<const Hook&, Callbacks&, Context&>, bool>)
            stop = hook(callbacks, ctx) || stop;
          else
            hook(callbacks, ctx);
        }
      }(),
      ...);
  return stop;
}

}  // namespace dptrain::detail
