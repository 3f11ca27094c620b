// The graph's memory plan (layers/memory_plan.h): a checker walks the
// schedule Graph::train_step runs and proves, for the models' plans, that
// every read sees the value its producer wrote, that no two values live at
// once share bytes, and that no step reads bytes it writes; training with the
// plan equals training without it bit for bit, on 1 and 2 CPU replicas.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "distributed/replica_manager.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/memory_plan.h"
#include "layers/models.h"
#include "layers/pool.h"
#include "layers/relu.h"
#include "support/replica_models.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

// Replays the schedule on a shadow of the buffer in which every float holds
// the token of the write that produced it; returns the first violation, or "".
class ScheduleChecker {
public:
  ScheduleChecker(const std::vector<PlanNode>& nodes, const MemoryPlan& plan, PlanKind kind)
      : nodes_(nodes), plan_(plan), n_(static_cast<int>(nodes.size())), train_(kind == PlanKind::train),
        shadow_(plan.total_bytes, 0), expected_(2 * nodes.size(), -1), first_(2 * nodes.size(), -1),
        last_(2 * nodes.size(), -1), group_(2 * nodes.size()) {
    std::iota(group_.begin(), group_.end(), 0);
  }

  std::string run() {
    if (static_cast<int>(plan_.output_offset.size()) != n_ || (train_ && static_cast<int>(plan_.grad_offset.size()) != n_))
      return "the plan does not place every value";
    for (int v = 0; v < (train_ ? 2 * n_ : n_); ++v)
      if (offset(v) < 0 || offset(v) % kPlanAlignBytes || offset(v) + value_bytes(v) > plan_.total_bytes)
        return "value " + name(v) + " lies outside the buffer or unaligned";
    for (int n = 0; n < n_; ++n) forward(n);
    begin_step(n_);
    read(out(n_ - 1));
    if (train_) {
      write(grad(n_ - 1));
      std::vector<bool> written(n_, false);
      written[n_ - 1] = true;
      for (int n = n_ - 1; n >= 0; --n) backward(n, written);
    }
    end_step();
    if (error_.empty()) check_live_values_apart();
    return error_;
  }

private:
  int out(int n) const { return n; }
  int grad(int n) const { return n_ + n; }
  int node_of(int v) const { return v % n_; }
  int64_t offset(int v) const { return v < n_ ? plan_.output_offset[v] : plan_.grad_offset[v - n_]; }
  int64_t value_bytes(int v) const { return plan_.capacity * nodes_[node_of(v)].bytes_per_sample; }
  std::string name(int v) const { return (v < n_ ? "output " : "gradient ") + std::to_string(node_of(v)); }
  int root(int v) { return group_[v] == v ? v : group_[v] = root(group_[v]); }
  bool overlap(int a, int b) const { return offset(a) < offset(b) + value_bytes(b) && offset(b) < offset(a) + value_bytes(a); }

  void fail(const std::string& why) {
    if (error_.empty()) error_ = "step " + std::to_string(step_) + ": " + why;
  }
  void touch(int v) {
    if (first_[v] < 0) first_[v] = step_;
    last_[v] = step_;
  }
  void begin_step(int t) {
    step_ = t;
    reads_.clear();
    writes_.clear();
  }
  // Within one step the kernels read and write at once: no written range may
  // overlap a range read or another written one.
  void end_step() {
    for (size_t i = 0; i < writes_.size(); ++i) {
      for (int r : reads_)
        if (r != writes_[i] && overlap(writes_[i], r)) fail(name(writes_[i]) + " is written over " + name(r) + ", read by the same step");
      for (size_t j = i + 1; j < writes_.size(); ++j)
        if (writes_[i] != writes_[j] && overlap(writes_[i], writes_[j]))
          fail(name(writes_[i]) + " and " + name(writes_[j]) + " are written by one step into shared bytes");
    }
  }
  void read(int v) {
    touch(v);
    reads_.push_back(v);
    if (expected_[v] < 0) return fail(name(v) + " is read before anything wrote it");
    for (int64_t i = offset(v); i < offset(v) + value_bytes(v); ++i)
      if (shadow_[i] != expected_[v]) return fail(name(v) + " was overwritten before this read");
  }
  void write(int v) {
    touch(v);
    writes_.push_back(v);
    const int token = next_token_++;
    std::fill(shadow_.begin() + offset(v), shadow_.begin() + offset(v) + value_bytes(v), token);
    expected_[v] = token;
  }
  void accumulate(int v) {
    read(v);
    write(v);
  }
  // The layer skips the copy when the plan put `v` at `source`'s address: `v`
  // then holds what `source` holds.
  bool aliased(int v, int source) {
    if (offset(v) != offset(source)) return false;
    read(source);
    touch(v);
    expected_[v] = expected_[source];
    group_[root(v)] = root(source);
    return true;
  }

  void forward(int n) {
    begin_step(n);
    const PlanNode& node = nodes_[n];
    for (int src : node.inputs)
      if (src >= 0) read(out(src));
    const bool identity = node.output_may_alias_input && node.inputs.size() == 1 && node.inputs[0] >= 0;
    if (!identity || !aliased(out(n), out(node.inputs[0]))) write(out(n));
    end_step();
  }

  void backward(int n, std::vector<bool>& written) {
    begin_step(2 * n_ - n);
    const PlanNode& node = nodes_[n];
    read(grad(n));
    if (node.backward_reads_output) read(out(n));
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] >= 0 && node.backward_reads_input[i]) read(out(node.inputs[i]));
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int src = node.inputs[i];
      if (src < 0) continue;
      const bool seen_here = std::find(node.inputs.begin(), node.inputs.begin() + i, src) != node.inputs.begin() + i;
      const bool add = written[src] || seen_here;
      read(grad(n));  // each input's gradient is formed from the output gradient
      if (add) {
        accumulate(grad(src));
      } else if (!node.input_grad_may_alias_output_grad || !aliased(grad(src), grad(n))) {
        write(grad(src));
      }
    }
    for (int src : node.inputs)
      if (src >= 0) written[src] = true;
    end_step();
  }

  // Values whose lifetimes (first to last touch, as walked) overlap share no
  // byte, unless one is an alias of the other.
  void check_live_values_apart() {
    const int values = train_ ? 2 * n_ : n_;
    for (int a = 0; a < values; ++a)
      for (int b = a + 1; b < values; ++b) {
        if (first_[a] < 0 || first_[b] < 0 || root(a) == root(b)) continue;
        const bool live_together = first_[a] <= last_[b] && first_[b] <= last_[a];
        if (live_together && overlap(a, b))
          return fail(name(a) + " and " + name(b) + " are live at once in shared bytes");
      }
  }

  const std::vector<PlanNode>& nodes_;
  const MemoryPlan& plan_;
  int n_;
  bool train_;
  std::vector<int> shadow_, expected_, first_, last_, group_;
  std::vector<int> reads_, writes_;
  int step_ = 0, next_token_ = 1;
  std::string error_;
};

std::string check(const std::vector<PlanNode>& nodes, const MemoryPlan& plan, PlanKind kind) {
  return ScheduleChecker(nodes, plan, kind).run();
}

// conv -> relu -> conv -> bn, added to the relu's output (an explicit add
// node), relu, added to itself, max pool, flattened twice (two views of one
// buffer), the flattens added and a linear layer: every alias the plan makes,
// an add reading one input twice, and a written gradient then accumulated.
std::unique_ptr<Graph> add_flatten_graph() {
  auto g = std::make_unique<Graph>(Shape{3, 6, 6}, 10, "add-flatten test graph");
  g->then("c1", std::make_unique<Conv2d>(4, 3, 1, 1));
  g->then("r1", std::make_unique<ReLU>());
  g->then("c2", std::make_unique<Conv2d>(4, 3, 1, 1));
  g->then("b2", std::make_unique<BatchNorm2d>());
  g->add("s", std::make_unique<Add>(), {"b2", "r1"});
  g->then("r2", std::make_unique<ReLU>());
  g->add("d", std::make_unique<Add>(), {"r2", "r2"});
  g->then("p", std::make_unique<MaxPool2d>(2, 2));
  g->add("f1", std::make_unique<Flatten>(), {"p"});
  g->add("f2", std::make_unique<Flatten>(), {"p"});
  g->add("g", std::make_unique<Add>(), {"f1", "f2"});
  g->then("fc", std::make_unique<Linear>(10));
  return g;
}

int64_t unaligned_sum(const std::vector<PlanNode>& nodes, int64_t capacity) {
  int64_t s = 0;
  for (const PlanNode& n : nodes) s += capacity * n.bytes_per_sample;
  return s;
}

ModelFactory add_flatten_model(uint64_t seed) {
  return [seed](Device device) -> std::unique_ptr<Model> {
    std::unique_ptr<Graph> g = add_flatten_graph();
    g->finalize(device, seed);
    return g;
  };
}

const SgdConfig sgd{0.9f, 1e-3f, false};

}  // namespace

TEST_CASE("the memory plan keeps every value intact until its last read", "[memory-plan]") {
  const std::string model = GENERATE(as<std::string>{}, "resnet18", "resnet20", "simple-cnn", "vgg11-bn", "mlp");
  const Shape input = model == "simple-cnn" || model == "mlp" ? Shape{1, 28, 28} : Shape{3, 32, 32};
  const int64_t capacity = GENERATE(1, 3);
  const MemoryFormat format = GENERATE(MemoryFormat::nchw, MemoryFormat::nhwc);
  INFO(model << " at capacity " << capacity << " in " << memory_format_name(format));
  std::unique_ptr<Graph> g = build_model(model, input, 10);
  const std::vector<PlanNode> nodes = g->plan_nodes(format);
  for (PlanKind kind : {PlanKind::train, PlanKind::eval}) {
    const MemoryPlan shared = plan_memory(nodes, capacity, kind, true);
    const MemoryPlan own = plan_memory(nodes, capacity, kind, false);
    REQUIRE(check(nodes, shared, kind) == "");
    REQUIRE(check(nodes, own, kind) == "");
    REQUIRE(shared.total_bytes < own.total_bytes);
    // The same capacity lays the buffer out the same way every time (a
    // captured CUDA-graph step replays at these addresses).
    const MemoryPlan again = plan_memory(nodes, capacity, kind, true);
    REQUIRE(again.output_offset == shared.output_offset);
    REQUIRE(again.grad_offset == shared.grad_offset);
  }
  // One buffer per value is exactly one output and one gradient per node.
  REQUIRE(plan_memory(nodes, capacity, PlanKind::train, false).total_bytes >= 2 * unaligned_sum(nodes, capacity));
}

TEST_CASE("the memory plan aliases flatten and add and survives accumulation", "[memory-plan]") {
  std::unique_ptr<Graph> g = add_flatten_graph();
  const std::vector<PlanNode> nodes = g->plan_nodes();
  const MemoryPlan plan = plan_memory(nodes, 2, PlanKind::train, true);
  REQUIRE(check(nodes, plan, PlanKind::train) == "");
  const auto index = [&](const std::string& name) {
    for (size_t i = 0; i < g->node_count(); ++i)
      if (g->node_name(i) == name) return i;
    FAIL("no node " << name);
    return size_t{0};
  };
  // Both flatten outputs are views of the pool's output.
  REQUIRE(plan.output_offset[index("f1")] == plan.output_offset[index("p")]);
  REQUIRE(plan.output_offset[index("f2")] == plan.output_offset[index("p")]);
  // g's backward writes f1's gradient first (aliased) and f2's (a copy); f2's
  // backward writes p's gradient (aliased to f2's) and f1's then adds into it.
  REQUIRE(plan.grad_offset[index("f1")] == plan.grad_offset[index("g")]);
  REQUIRE(plan.grad_offset[index("f2")] != plan.grad_offset[index("g")]);
  REQUIRE(plan.grad_offset[index("p")] == plan.grad_offset[index("f2")]);
  // The add of r2 to itself accumulates: no alias there.
  REQUIRE(plan.grad_offset[index("r2")] != plan.grad_offset[index("d")]);
  // s writes b2's gradient into its own; r1's, which c2 then adds to, is a copy.
  REQUIRE(plan.grad_offset[index("b2")] == plan.grad_offset[index("s")]);
  REQUIRE(plan.grad_offset[index("r1")] != plan.grad_offset[index("s")]);

  SECTION("the checker catches an alias of a gradient that is accumulated into") {
    // d reads r2 twice: its backward writes r2's gradient, then adds the
    // second term. In d's buffer, that add would read d's gradient and write
    // r2's over the same bytes in one kernel.
    MemoryPlan bad = plan;
    bad.grad_offset[index("r2")] = bad.grad_offset[index("d")];
    REQUIRE(check(nodes, bad, PlanKind::train) != "");
  }
  SECTION("the checker catches two live values in shared bytes") {
    MemoryPlan bad = plan;
    // c2's output is x of b2's backward, long after r2's forward wrote there.
    bad.output_offset[index("c2")] = bad.output_offset[index("r2")];
    REQUIRE(check(nodes, bad, PlanKind::train) != "");
  }
  SECTION("the checker catches a gradient aliased where it is added to") {
    // f1's backward adds into p's gradient; aliasing p's gradient to f1's
    // would make f2's written gradient land in f1's, still unread.
    MemoryPlan bad = plan;
    bad.grad_offset[index("p")] = bad.grad_offset[index("f1")];
    REQUIRE(check(nodes, bad, PlanKind::train) != "");
  }
}

TEST_CASE("in nhwc flatten of a feature map is a transpose with buffers of its own, of 1x1 pixels still an alias",
          "[memory-plan][nhwc]") {
  // simple-cnn flattens [64, 7, 7] maps (a transpose in NHWC); resnet20
  // flattens the global pool's [64, 1, 1], which lies alike in both formats.
  const auto flatten_of = [](const Graph& g) {
    for (size_t i = 0; i < g.node_count(); ++i)
      if (g.layer(i).type() == "flatten") return i;
    FAIL("no flatten");
    return size_t{0};
  };
  std::unique_ptr<Graph> cnn = build_model("simple-cnn", Shape{1, 28, 28}, 10);
  const size_t f = flatten_of(*cnn);
  const int src = cnn->node_inputs(f)[0];
  for (MemoryFormat format : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
    INFO(memory_format_name(format));
    const std::vector<PlanNode> nodes = cnn->plan_nodes(format);
    const MemoryPlan plan = plan_memory(nodes, 3, PlanKind::train, true);
    REQUIRE(check(nodes, plan, PlanKind::train) == "");
    const bool alias = format == MemoryFormat::nchw;
    REQUIRE((plan.output_offset[f] == plan.output_offset[src]) == alias);
    REQUIRE((plan.grad_offset[f] == plan.grad_offset[src]) == alias);
  }
  std::unique_ptr<Graph> resnet = build_model("resnet20", Shape{3, 32, 32}, 10);
  const size_t rf = flatten_of(*resnet);
  const MemoryPlan plan = resnet->memory_plan(3, PlanKind::train, true, MemoryFormat::nhwc);
  REQUIRE(plan.output_offset[rf] == plan.output_offset[resnet->node_inputs(rf)[0]]);
  REQUIRE(plan.output_offset == resnet->memory_plan(3, PlanKind::train, true).output_offset);
}

TEST_CASE("the memory plan reports resnet18's activation memory at batch 512", "[memory-plan]") {
  std::unique_ptr<Graph> g = build_model("resnet18", Shape{3, 32, 32}, 10);
  const int64_t planned = g->activation_bytes(512);
  const int64_t unplanned = g->unplanned_activation_bytes(512);
  const std::vector<PlanNode> nodes = g->plan_nodes();
  // Unplanned: every output and every gradient (the plan nodes count fp32's 4 bytes each).
  REQUIRE(unplanned == 2 * unaligned_sum(nodes, 512));
  // Planned: every output a backward reads is live at once when the loss
  // runs (written in forward, read in backward), so no plan holds less;
  // the gradients live a few at a time, at most the three a residual block
  // holds at once (the block's output gradient, its branch's, its
  // shortcut's) of the largest size, 512 x 64 x 32 x 32 values.
  std::vector<bool> read_back(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].backward_reads_output) read_back[i] = true;
    for (size_t k = 0; k < nodes[i].inputs.size(); ++k)
      if (nodes[i].inputs[k] >= 0 && nodes[i].backward_reads_input[k]) read_back[nodes[i].inputs[k]] = true;
  }
  int64_t saved = 0, largest = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    largest = std::max(largest, 512 * nodes[i].bytes_per_sample);
    if (read_back[i]) saved += 512 * nodes[i].bytes_per_sample;
  }
  INFO("planned " << planned << " bytes, unplanned " << unplanned << ", saved outputs " << saved);
  REQUIRE(planned >= saved);
  REQUIRE(planned <= saved + 3 * largest);
  REQUIRE(g->allocated_activation_bytes() == 0);  // computed, nothing allocated
}

TEST_CASE("training with the memory plan equals training without it bit for bit", "[memory-plan][replica]") {
  const std::string model = GENERATE(as<std::string>{}, "resnet20", "simple-cnn", "add-flatten");
  const int replicas = GENERATE(1, 2);
  INFO(model << " on " << replicas << " CPU replicas");
  const Shape sample = model == "resnet20" ? Shape{3, 8, 8} : model == "simple-cnn" ? Shape{1, 16, 16} : Shape{3, 6, 6};
  const ModelFactory make = model == "add-flatten" ? add_flatten_model(7) : named_model(model, sample, {}, 7);
  const std::vector<Device> devices(replicas, Device::cpu());
  ReplicaManager planned(with_memory_planning(make, true), devices);
  ReplicaManager unplanned(with_memory_planning(make, false), devices);
  // Batch sizes that shrink and grow again (the buffer is laid out for the
  // largest), with an evaluation in between that overwrites the values.
  const std::vector<int64_t> sizes = {8, 5, 12, 12};
  for (size_t s = 0; s < sizes.size(); ++s) {
    const HostBatch batch = pinned_batch(sizes[s], sample, 40 + s);
    const StepMetrics a = planned.train_step(batch, 0.05f, sgd);
    const StepMetrics b = unplanned.train_step(batch, 0.05f, sgd);
    REQUIRE(a.loss_sum == b.loss_sum);
    REQUIRE(a.correct == b.correct);
    REQUIRE(planned.model(0).arenas().params.to_vector() == unplanned.model(0).arenas().params.to_vector());
    REQUIRE(planned.model(0).state_arena().to_vector() == unplanned.model(0).state_arena().to_vector());
    const HostBatch held_out = pinned_batch(6, sample, 90 + s);
    REQUIRE(planned.logits(held_out) == unplanned.logits(held_out));
  }
  Graph& g = dynamic_cast<Graph&>(planned.model(0));
  Graph& own = dynamic_cast<Graph&>(unplanned.model(0));
  REQUIRE(g.allocated_activation_bytes() < own.allocated_activation_bytes());
  REQUIRE(own.allocated_activation_bytes() == own.unplanned_activation_bytes(12 / replicas));
}

TEST_CASE("LOCKSTEP_MEMORY_PLAN accepts on and off only", "[memory-plan]") {
  // Unset again however the test ends: the graphs of later tests read it.
  struct Unset {
    ~Unset() { unsetenv("LOCKSTEP_MEMORY_PLAN"); }
  } unset;
  setenv("LOCKSTEP_MEMORY_PLAN", "off", 1);
  REQUIRE_FALSE(Graph(Shape{4}, 2, "x").memory_planning());
  setenv("LOCKSTEP_MEMORY_PLAN", "on", 1);
  REQUIRE(Graph(Shape{4}, 2, "x").memory_planning());
  setenv("LOCKSTEP_MEMORY_PLAN", "of", 1);
  REQUIRE_THROWS_WITH(Graph(Shape{4}, 2, "x"), Catch::Contains("LOCKSTEP_MEMORY_PLAN='of'"));
  unsetenv("LOCKSTEP_MEMORY_PLAN");
  REQUIRE(Graph(Shape{4}, 2, "x").memory_planning());
}
