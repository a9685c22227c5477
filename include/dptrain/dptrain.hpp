// SPDX-License-Identifier: MIT
// The umbrella header: everything dptrain offers. Examples and users include only this.
#pragma once

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/context.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/omp.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/team.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"

#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/data/sparse_dataset.hpp"
#include "dptrain/data/min_max_scaler.hpp"
#include "dptrain/data/standardizer.hpp"
#include "dptrain/data/train_validation_split.hpp"

#include "dptrain/io/checkpoint.hpp"
#include "dptrain/io/csv_reader.hpp"
#include "dptrain/io/idx_reader.hpp"
#include "dptrain/io/libsvm_reader.hpp"

#include "dptrain/models/gradient_check.hpp"
#include "dptrain/models/linear_regression.hpp"
#include "dptrain/models/logistic_regression.hpp"
#include "dptrain/models/mlp.hpp"
#include "dptrain/models/softmax_regression.hpp"
#include "dptrain/models/sparse_logistic_regression.hpp"
#include "dptrain/models/sparse_softmax_regression.hpp"

#include "dptrain/partitioners/balancing_partitioner.hpp"
#include "dptrain/partitioners/even_partitioner.hpp"
#include "dptrain/partitioners/weighted_partitioner.hpp"

#include "dptrain/aggregators/reduce_scatter_aggregator.hpp"
#include "dptrain/aggregators/ring_all_reduce_aggregator.hpp"
#include "dptrain/aggregators/serial_aggregator.hpp"
#include "dptrain/aggregators/tree_aggregator.hpp"

#include "dptrain/optimizers/adagrad.hpp"
#include "dptrain/optimizers/adam.hpp"
#include "dptrain/optimizers/adamw.hpp"
#include "dptrain/optimizers/constant_schedule.hpp"
#include "dptrain/optimizers/cosine_schedule.hpp"
#include "dptrain/optimizers/linear_scaling.hpp"
#include "dptrain/optimizers/momentum.hpp"
#include "dptrain/optimizers/rmsprop.hpp"
#include "dptrain/optimizers/sgd.hpp"
#include "dptrain/optimizers/step_schedule.hpp"
#include "dptrain/optimizers/warmup_schedule.hpp"

#include "dptrain/workers/gradient_worker.hpp"
#include "dptrain/workers/straggler_worker.hpp"

#include "dptrain/evaluation/accuracy.hpp"
#include "dptrain/evaluation/confusion_matrix.hpp"
#include "dptrain/evaluation/mean_loss.hpp"

#include "dptrain/callbacks/checkpoint.hpp"
#include "dptrain/callbacks/early_stopping.hpp"
#include "dptrain/callbacks/evaluate.hpp"
#include "dptrain/callbacks/metrics_log.hpp"
#include "dptrain/callbacks/progress_bar.hpp"
#include "dptrain/callbacks/time_limit.hpp"

#include "dptrain/trainer/data_parallel_trainer.hpp"
#include "dptrain/trainer/trainer_options.hpp"
