#pragma once
// The graph's memory plan: where each node's output and output gradient lie
// in one activation buffer, so that values whose lifetimes do not overlap
// share bytes. Computed from the node list alone (no model runs, nothing is
// allocated), once per batch capacity: the same capacity gives the same
// offsets, which the CUDA-graph step (runtime/step_graph.h) relies on when it
// replays a step at fixed addresses.
//
// The schedule it plans, in time steps (Graph::train_step runs exactly this):
//   t = n          forward of node n: reads its inputs' outputs, writes its output
//   t = N          the loss: reads the last output, writes the last gradient
//   t = 2N - n     backward of node n: reads its gradient and the outputs its
//                  layer says it reads, writes (the first, i.e. the latest
//                  consumer) or adds to (the rest) each input's gradient
// An output lives from its forward to its last read, a gradient from its
// first write to its node's backward; inclusive, so the values a step reads
// and writes never share bytes. Two aliases make a value a view of another
// instead of a buffer of its own, where the layer allows it:
//  - a flatten output is its input's output (neither is written again);
//  - an add or flatten input gradient that is written (GradMode::write) is
//    the output gradient: that is read by this backward alone, so the input's
//    later accumulations (GradMode::add) touch a dead value. An add takes
//    this for one input at most, and not for an input it reads twice.
// Evaluation plans outputs only, each living from its forward to its last
// forward read (the logits to the end).
#include <cstdint>
#include <vector>

namespace lockstep {

// A node as the plan sees it (Graph::plan_nodes builds these from its layers).
struct PlanNode {
  std::vector<int> inputs;       // node indices, -1 the data (not planned)
  int64_t bytes_per_sample = 0;  // of the output, and so of the gradient (in the stored type)
  std::vector<bool> backward_reads_input;  // per input
  bool backward_reads_output = true;
  bool output_may_alias_input = false;
  bool input_grad_may_alias_output_grad = false;
};

enum class PlanKind { train, eval };

struct MemoryPlan {
  int64_t capacity = 0;     // samples
  int64_t total_bytes = 0;  // the buffer's size
  // Per node, in bytes from the buffer's start; grad_offset is empty for eval.
  std::vector<int64_t> output_offset, grad_offset;
  int64_t bytes() const { return total_bytes; }
};

// Offsets are multiples of kPlanAlignBytes, as cudaMalloc's are (and so of
// every element size: the graph views the buffer as f32 or as bf16).
inline constexpr int64_t kPlanAlignBytes = 256;

// The plan for `nodes` (topological, as Graph keeps them) at `capacity`
// samples. `share` false gives every value a buffer of its own, nothing
// aliased (one output and one gradient per node; for eval the training
// layout's outputs), the figure to compare with. Throws on a node reading a
// later node or a capacity below 1.
MemoryPlan plan_memory(const std::vector<PlanNode>& nodes, int64_t capacity, PlanKind kind, bool share);

}  // namespace lockstep
