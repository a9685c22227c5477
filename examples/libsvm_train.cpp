// SPDX-License-Identifier: MIT
// libsvm_train: like liblinear's `train`: logistic or softmax regression on any LIBSVM file,
// on every core, then the model written to a text file; or, with -v k, k-fold cross-validation.
#include <dptrain/dptrain.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string train_file, model_file, test_file;
  std::string model = "auto";
  dptrain::Index threads = dptrain::default_threads();
  dptrain::Index batch = 256;
  dptrain::Index epochs = 10;
  double lr = 0.1;
  std::uint64_t seed = 1;
  dptrain::Index folds = 0;  // -v k: cross-validate instead of writing a model (0: off)
};

// The model file: a header line per field, then θ one value per line (layout in docs/models.md).
void write_model(const std::string& path, const std::string& type, dptrain::Index features,
                 const std::vector<double>& classes, const dptrain::Vector<float>& theta) {
  std::ofstream out(path);
  out << "dptrain_model " << type << "\nfeatures " << features << "\nclasses";
  for (double c : classes) out << ' ' << c;
  out << "\nparameters " << theta.size() << '\n';
  for (dptrain::Index i = 0; i < theta.size(); ++i) out << theta[i] << '\n';
  if (!out) throw dptrain::error("could not write " + path);
}

template <class Model>
int train(const Model& model, const std::string& type, const dptrain::LibsvmData<float, dptrain::Label>& data,
          const Options& o) {
  dptrain::Vector<float> theta = model.init_parameters(o.seed);
  dptrain::DataParallelTrainer trainer(
      {.threads = o.threads, .batch_size = o.batch, .epochs = o.epochs, .seed = o.seed}, dptrain::Momentum{.lr = o.lr});
  dptrain::ProgressBar progress;
  const dptrain::FitReport report = trainer.fit(model, theta, data.data, progress);
  std::printf("%s: %ld samples, %ld features, %zu classes; final epoch loss %.4f, training accuracy %.2f%%\n",
              type.c_str(), long(data.data.size()), long(data.data.dim()), data.classes.size(),
              report.epoch_loss.back(), 100 * dptrain::accuracy(model, theta, data.data, o.threads));
  if (!o.test_file.empty()) {
    const auto test = dptrain::read_libsvm<float, dptrain::Label>(
        o.test_file, {.features = data.data.dim(), .labels = dptrain::LabelMode::multiclass, .classes = data.classes});
    std::printf("test accuracy on %s: %.2f%%\n", o.test_file.c_str(),
                100 * dptrain::accuracy(model, theta, test.data, o.threads));
  }
  write_model(o.model_file, type, data.data.dim(), data.classes, theta);
  std::printf("model written to %s\n", o.model_file.c_str());
  return 0;
}

// liblinear's `train -v k`: k-fold cross-validation, each fold's model trained from scratch on the
// other folds and scored on its own; the accuracy over all samples, in liblinear's words. The
// folds are stratified, so each holds every class's share; one fold's copy is held at a time.
template <class Model>
int cross_validate(const Model& model, const dptrain::LibsvmData<float, dptrain::Label>& data, const Options& o) {
  const dptrain::KFold cv = dptrain::k_fold(data.data, {.folds = o.folds, .seed = o.seed, .stratified = true});
  dptrain::DataParallelTrainer trainer(
      {.threads = o.threads, .batch_size = o.batch, .epochs = o.epochs, .seed = o.seed}, dptrain::Momentum{.lr = o.lr});
  dptrain::Index correct = 0;
  for (dptrain::Index i = 0; i < cv.folds(); ++i) {
    const auto [train, validation] = cv.split(data.data, i);
    dptrain::Vector<float> theta = model.init_parameters(o.seed);
    trainer.fit(model, theta, train);
    const double accuracy = dptrain::accuracy(model, theta, validation, o.threads);
    correct += std::llround(accuracy * static_cast<double>(validation.size()));
    std::printf("fold %ld of %ld: trained on %ld samples, %.2f%% of %ld held-out samples right\n", long(i + 1),
                long(cv.folds()), long(train.size()), 100 * accuracy, long(validation.size()));
  }
  std::printf("Cross Validation Accuracy = %g%%\n",
              100.0 * static_cast<double>(correct) / static_cast<double>(data.data.size()));
  return 0;
}

template <class Model>
int run(const Model& model, const std::string& type, const dptrain::LibsvmData<float, dptrain::Label>& data,
        const Options& o) {
  return o.folds > 0 ? cross_validate(model, data, o) : train(model, type, data, o);
}

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  CLI::App app("Train logistic or softmax regression on a LIBSVM/SVMlight file (like liblinear's train)");
  app.add_option("training_file", o.train_file, "LIBSVM file to train on")->required()->check(CLI::ExistingFile);
  app.add_option("model_file", o.model_file, "where to write the model (default: training_file.model)");
  app.add_option("--test", o.test_file, "LIBSVM file to report the accuracy on")->check(CLI::ExistingFile);
  app.add_option("--model", o.model, "logistic, softmax, or auto (logistic for two classes)")
      ->check(CLI::IsMember({"auto", "logistic", "softmax"}));
  app.add_option("--threads", o.threads, "worker threads (default: all cores)")->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "global minibatch size")->check(CLI::PositiveNumber);
  app.add_option("--epochs", o.epochs, "passes over the data")->check(CLI::PositiveNumber);
  app.add_option("--lr", o.lr, "learning rate (momentum SGD)")->check(CLI::PositiveNumber);
  app.add_option("--seed", o.seed, "seed of the shuffle (and of the folds of -v)");
  app.add_option("-v", o.folds,
                 "k-fold cross-validation (k >= 2): print the cross-validation accuracy instead of writing a model")
      ->type_name("k")
      ->check(CLI::Range(dptrain::Index{2}, std::numeric_limits<dptrain::Index>::max()).description(""));
  CLI11_PARSE(app, argc, argv);
  if (o.model_file.empty()) o.model_file = o.train_file + ".model";

  // Labels become classes 0 … k−1 in sorted order; the mapping is written with the model.
  const auto data =
      dptrain::read_libsvm<float, dptrain::Label>(o.train_file, {.labels = dptrain::LabelMode::multiclass});
  const auto classes = static_cast<dptrain::Index>(data.classes.size());
  if (classes < 2) throw dptrain::error("the training file has fewer than two classes");
  if (o.model == "logistic" || (o.model == "auto" && classes == 2)) {
    if (classes != 2) throw dptrain::error("logistic regression needs exactly two classes");
    return run(dptrain::SparseLogisticRegression<float>(data.data.dim()), "logistic", data, o);
  }
  return run(dptrain::SparseSoftmaxRegression<float>(data.data.dim(), classes), "softmax", data, o);
} catch (const std::exception& e) {
  std::fprintf(stderr, "libsvm_train: %s\n", e.what());
  return 1;
}
