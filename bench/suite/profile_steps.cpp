#include "profile_steps.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/error.h"
#include "bench/support/median.h"
#include "distributed/running_stats_combine.h"
#include "ops/sgd.h"

namespace lockstep::bench {

namespace {

using Clock = std::chrono::steady_clock;

// A Context can read back its last 64 marks (runtime/context.h). A marked
// step makes 6 of its own (its start, the model's three, the update's start
// and its end) and two per window (where each pass's chain starts), leaving
// two per node: one after its forward, one after its backward.
constexpr int kContextMarks = 64;
constexpr int kStepMarks = 8;
constexpr int kWindowNodes = (kContextMarks - kStepMarks) / 2;

// The marks one step puts around the nodes [begin, end) through the graph's hook.
struct Window {
  size_t begin = 0, end = 0;
  int forward_start = -1, backward_start = -1;
  std::vector<int> forward_done, backward_done;  // per node of the window, -1 until marked

  Window(size_t b, size_t e) : begin(b), end(e), forward_done(e - b, -1), backward_done(e - b, -1) {}

  void on_node(Context& ctx, size_t n, Graph::NodePass pass, bool done) {
    if (n < begin || n >= end) return;
    const bool forward = pass == Graph::NodePass::forward;
    // Forward runs the nodes up, backward down: each chain starts at its first node.
    if (!done) {
      if (forward && n == begin) forward_start = ctx.mark_time();
      if (!forward && n == end - 1) backward_start = ctx.mark_time();
      return;
    }
    (forward ? forward_done : backward_done)[n - begin] = ctx.mark_time();
  }
  // The mark before node n's pass in its chain (-1 when there is none).
  int forward_before(size_t n) const { return n == begin ? forward_start : forward_done[n - 1 - begin]; }
  int backward_before(size_t n) const { return n + 1 == end ? backward_start : backward_done[n + 1 - begin]; }
};

// Every sample of every part, over the rounds.
struct Samples {
  std::vector<std::vector<double>> forward, backward, weight_alone, data_and_weight;
  std::vector<double> input, loss, statistics, update, marked_step, unmarked_step, host_enqueue, host_step;
  explicit Samples(size_t nodes) : forward(nodes), backward(nodes), weight_alone(nodes), data_and_weight(nodes) {}
};

std::optional<double> median_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return median(values);
}

double seconds(const Clock::time_point& from, const Clock::time_point& to) {
  return std::chrono::duration<double>(to - from).count();
}

class StepRunner {
public:
  StepRunner(Graph& graph, Context& ctx, const Tensor& images, const Tensor& labels)
      : graph_(graph), ctx_(ctx), images_(images), labels_(labels) {}

  // One training step as the replica manager queues it for a lone replica
  // (distributed/replica_manager.cpp, queue_device_work), with node marks in
  // `window` when given; its parts go to `samples` when given.
  void step(Window* window, Samples* samples) {
    if (window) graph_.set_node_hook([window](Context& c, size_t n, Graph::NodePass p, bool done) {
      window->on_node(c, n, p, done);
    });
    else graph_.set_node_hook({});
    ctx_.clear_marks();
    const Clock::time_point queue_start = Clock::now();
    const int start = ctx_.mark_time();
    const StepInfo info{1, step_++, 0, nullptr};
    const float loss_scale = 1.0f / static_cast<float>(images_.dim(0));
    const TrainStepResult result = graph_.train_step(ctx_, info, images_, labels_, loss_scale);
    statistics_.run(graph_, ctx_, nullptr, 0, 1.0);
    const int update = ctx_.mark_time();
    ops::sgd_step(ctx_, graph_.arenas(), sgd_, 0.01f);
    const int end = ctx_.mark_time();
    const Clock::time_point queued = Clock::now();
    const StepMetrics metrics = result.metrics();  // the step's one wait
    ctx_.synchronize();
    const Clock::time_point done = Clock::now();
    graph_.set_node_hook({});
    last_loss_ = metrics.loss_sum / static_cast<double>(std::max<int64_t>(metrics.count, 1));
    LS_CHECK(std::isfinite(last_loss_), "profile: the step's loss is ", last_loss_, " (step ", step_, ")");
    if (!samples) return;
    if (!window) {
      samples->unmarked_step.push_back(ctx_.seconds_between(start, end));
      samples->host_enqueue.push_back(seconds(queue_start, queued));
      samples->host_step.push_back(seconds(queue_start, done));
      return;
    }
    samples->marked_step.push_back(ctx_.seconds_between(start, end));
    samples->statistics.push_back(ctx_.seconds_between(result.end_mark, update));
    samples->update.push_back(ctx_.seconds_between(update, end));
    read_window(*window, result, *samples);
  }

  double last_loss() const { return last_loss_; }

private:
  void read_window(const Window& w, const TrainStepResult& result, Samples& samples) {
    for (size_t n = w.begin; n < w.end; ++n) {
      const int f = w.forward_done[n - w.begin], fb = w.forward_before(n);
      if (f >= 0 && fb >= 0) samples.forward[n].push_back(ctx_.seconds_between(fb, f));
      const int b = w.backward_done[n - w.begin], bb = w.backward_before(n);
      if (b >= 0 && bb >= 0) samples.backward[n].push_back(ctx_.seconds_between(bb, b));
    }
    if (w.begin == 0 && w.forward_start >= 0)
      samples.input.push_back(ctx_.seconds_between(result.forward_mark, w.forward_start));
    if (w.end == graph_.node_count() && w.backward_start >= 0)
      samples.loss.push_back(ctx_.seconds_between(result.backward_mark, w.backward_start));
  }

  Graph& graph_;
  Context& ctx_;
  const Tensor& images_;
  const Tensor& labels_;
  RunningStatsCombine statistics_;
  const SgdConfig sgd_{0.9f, 5e-4f, false};
  uint64_t step_ = 0;
  double last_loss_ = 0;
};

// A zero batch of `per_sample` values as the graph stores its activations
// (type and, for images, memory format), for a node's backward run apart.
Tensor activation_like(const Graph& graph, Context& ctx, int64_t batch, const Shape& per_sample) {
  Shape shape;
  switch (per_sample.rank()) {
    case 1: shape = Shape{batch, per_sample[0]}; break;
    case 2: shape = Shape{batch, per_sample[0], per_sample[1]}; break;
    default: shape = Shape{batch, per_sample[0], per_sample[1], per_sample[2]}; break;
  }
  Tensor t = Tensor::zeros(shape, ctx.device(), graph.activation_stored_type());
  return per_sample.rank() == 3 ? t.with_format(graph.activation_format()) : t;
}

// Node n's backward outside the step, `rounds` times each way: without the
// input gradients (the weight gradient alone), then with them. It writes the
// node's parameter gradients, which the profile's next step overwrites.
void time_split(Graph& graph, Context& ctx, size_t n, int64_t batch, int rounds, Samples& samples) {
  std::vector<Tensor> inputs, grads, none;
  for (int i : graph.node_inputs(n)) {
    const Shape& s = i < 0 ? graph.input_shape() : graph.node_output_shape(static_cast<size_t>(i));
    inputs.push_back(activation_like(graph, ctx, batch, s));
    // The data has no gradient (the graph passes none), so such a node has no split.
    grads.push_back(i < 0 ? Tensor() : activation_like(graph, ctx, batch, s));
    none.emplace_back();
  }
  const Tensor out = activation_like(graph, ctx, batch, graph.node_output_shape(n));
  const Tensor out_grad = activation_like(graph, ctx, batch, graph.node_output_shape(n));
  const std::vector<GradMode> modes(inputs.size(), GradMode::write);
  Layer& layer = graph.layer(n);
  layer.backward(ctx, inputs, out, out_grad, none, modes);  // once untimed: first-call searches
  for (int r = 0; r < rounds; r += kContextMarks / 3) {
    ctx.clear_marks();
    std::vector<int> marks;
    for (int k = r; k < std::min(rounds, r + kContextMarks / 3); ++k) {
      marks.push_back(ctx.mark_time());
      layer.backward(ctx, inputs, out, out_grad, none, modes);
      marks.push_back(ctx.mark_time());
      layer.backward(ctx, inputs, out, out_grad, grads, modes);
      marks.push_back(ctx.mark_time());
    }
    ctx.synchronize();
    for (size_t m = 0; m + 2 < marks.size(); m += 3) {
      samples.weight_alone[n].push_back(ctx.seconds_between(marks[m], marks[m + 1]));
      samples.data_and_weight[n].push_back(ctx.seconds_between(marks[m + 1], marks[m + 2]));
    }
  }
}

}  // namespace

StepProfile profile_steps(Graph& graph, Context& ctx, const Tensor& images, const Tensor& labels,
                          const ProfileSetup& setup) {
  LS_CHECK(setup.rounds >= 1 && setup.warmup >= 0, "profile: at least one round (--steps) and no negative --warmup");
  LS_CHECK(images.dim(0) == setup.batch && setup.batch > 0, "profile: a batch of ", setup.batch, " samples, got ",
           images.dim(0));
  const size_t nodes = graph.node_count();
  StepRunner runner(graph, ctx, images, labels);
  for (int i = 0; i < setup.warmup; ++i) runner.step(nullptr, nullptr);

  Samples samples(nodes);
  const size_t width = static_cast<size_t>(kWindowNodes);
  for (int r = 0; r < setup.rounds; ++r) {
    runner.step(nullptr, &samples);
    for (size_t begin = 0; begin < nodes; begin += width) {
      Window window(begin, std::min(nodes, begin + width));
      runner.step(&window, &samples);
    }
  }
  for (size_t n : setup.split_nodes) time_split(graph, ctx, n, setup.batch, setup.rounds, samples);

  StepProfile p;
  for (size_t n = 0; n < nodes; ++n)
    p.nodes.push_back({median_of(samples.forward[n]), median_of(samples.backward[n]),
                       median_of(samples.weight_alone[n]), median_of(samples.data_and_weight[n])});
  p.input = median_of(samples.input).value_or(0);
  p.loss = median_of(samples.loss).value_or(0);
  p.statistics = median(samples.statistics);
  p.update = median(samples.update);
  p.marked_step = median(samples.marked_step);
  p.unmarked_step = median(samples.unmarked_step);
  p.host_enqueue = median(samples.host_enqueue);
  p.host_step = median(samples.host_step);
  p.window_nodes = kWindowNodes;
  p.windows = static_cast<int>((nodes + width - 1) / width);
  p.last_loss = runner.last_loss();
  return p;
}

}  // namespace lockstep::bench
