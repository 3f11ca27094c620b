#pragma once
// The measuring half of `lockstep-bench profile` (profile.cpp reports):
// one replica's training step, as the replica manager queues it eagerly with
// one replica (Graph::train_step, the running-statistics combine, the fused
// SGD step), timed by the Context's marks (runtime/context.h): events on the
// compute stream on a GPU, the host clock on the CPU.
//
// Per node, Graph::set_node_hook puts a mark after each node's forward and
// backward, chained (a node's time runs from the mark before it to its own),
// so a pass's nodes add up to the pass. A Context keeps only its last 64
// marks and a step is not waited for before its end, so each step marks a
// window of nodes and a round is one unmarked step (the step's own total,
// host enqueue against device time) plus one step per window.
//
// Convolution and linear backward compute the data gradient and the weight
// gradient in one call; to tell them apart, such a node's backward is also
// run outside the step on buffers of the same shapes, once without the input
// gradient (the weight gradient alone) and once with it (both): the data
// gradient is the difference.
#include <cstdint>
#include <optional>
#include <vector>

#include "layers/graph.h"

namespace lockstep::bench {

struct ProfileSetup {
  int warmup = 1;   // unmarked steps first (cuDNN's searches, the allocator's blocks)
  int rounds = 3;   // each: the unmarked step and the windows; the figures are medians over rounds
  int64_t batch = 1;
  // Nodes whose backward is also timed apart (convolution and linear with a
  // data gradient: profile.cpp picks them from layers/step_cost.h).
  std::vector<size_t> split_nodes;
};

// Medians over the rounds, in seconds.
struct NodeProfile {
  std::optional<double> forward, backward;             // in the step; unset: the hook never saw the pass
  std::optional<double> weight_alone, data_and_weight;  // apart, for split_nodes
};

struct StepProfile {
  std::vector<NodeProfile> nodes;  // one per graph node
  double input = 0;      // before the first node's forward: the images' conversion, the bf16 weight copy
  double loss = 0;       // between the last node's forward and its backward
  double statistics = 0; // the running statistics' combination
  double update = 0;     // the fused SGD step
  double marked_step = 0;    // a marked step, its first mark to its last
  double unmarked_step = 0;  // the same for a step without node marks
  double host_enqueue = 0;   // host time to queue an unmarked step (no wait)
  double host_step = 0;      // host time of an unmarked step with its read-back
  int window_nodes = 0, windows = 0;
  double last_loss = 0;  // the last step's mean loss (finite, or the step went wrong)
};

// Runs setup.warmup + setup.rounds * (1 + windows) steps of `graph` (finalised
// on ctx's device) on `images` and `labels` there, then the split nodes'
// backward apart; leaves the graph's hook unset.
StepProfile profile_steps(Graph& graph, Context& ctx, const Tensor& images, const Tensor& labels,
                          const ProfileSetup& setup);

}  // namespace lockstep::bench
