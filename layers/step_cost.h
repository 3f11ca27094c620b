#pragma once
// The work of one training step of a Graph, counted from its layers' shapes,
// never measured: per node, the floating-point operations of forward,
// backward-data and backward-weights, and the bytes a layer-at-a-time
// execution must at least move between device memory and the chip. The
// roofline bound of lockstep-bench (bench/suite/roofline.cpp) divides them
// by a GPU's published peaks.
//
// FLOPs: a multiply-add counts 2. Convolution and linear, the matrix work:
// forward 2*N*O*OH*OW*C*K*K (linear 2*N*O*F), backward-data and
// backward-weights as much again each, except that the data has no gradient
// (the first layer has no backward-data); a bias adds N*O*OH*OW to forward
// and to backward-weights. Every other layer is elementwise, counted per
// element as step_cost.cpp writes beside each (batch norm 5 forward and 9
// backward, ReLU 1 and 1, ...); the loss and the SGD update are rows of
// their own.
//
// Bytes, the minimum traffic model:
//  - every layer pass reads each tensor it needs once and writes each tensor
//    it produces once, and nothing stays on the chip from one layer to the
//    next (layer-at-a-time execution, as eager engines run);
//  - forward reads the inputs and the weights and writes the output;
//    backward reads dy, what it needs of forward (convolution and linear:
//    x, and the weights when dx is needed; batch norm: x; ReLU: y; max pool:
//    x) and writes dx (for inputs that are not the data) and the weight
//    gradients; a layer's backward-data and backward-weights share one read
//    of dy;
//  - flatten's copy and the add's backward are aliases (0 bytes), and where
//    a tensor feeds two layers the sum of its two gradients is not charged;
//  - the update reads weight, gradient and momentum and writes weight and
//    momentum once each, plus the compute copy of the weights in bf16;
//  - element sizes: activations and their gradients `activation_bytes`;
//    convolution and linear weights, as forward and backward read them and
//    their gradients, `weight_bytes`; batch-norm parameters, master weights
//    and momentum 4 bytes.
#include <string>
#include <vector>

#include "layers/graph.h"

namespace lockstep {

struct StepCostOptions {
  int64_t batch = 1;
  int activation_bytes = 4;  // 4 (fp32, tf32) or 2 (bf16)
  int weight_bytes = 4;      // the copy of conv/linear weights forward and backward read
  bool weight_copy = false;  // the update writes that copy besides the fp32 master (bf16)
};

struct LayerCost {
  std::string name;  // the node's name, or "loss" / "sgd update"
  std::string type;  // the layer's type(), "softmax_cross_entropy" or "sgd"
  bool matrix = false;  // convolution or linear: runs on the matrix units
  int64_t parameters = 0;
  double forward_flops = 0, backward_data_flops = 0, backward_weight_flops = 0;
  double forward_bytes = 0, backward_bytes = 0;

  double flops() const { return forward_flops + backward_data_flops + backward_weight_flops; }
  double bytes() const { return forward_bytes + backward_bytes; }
};

struct StepCost {
  std::vector<LayerCost> layers;  // the graph's nodes in order, then the loss and the update
  double flops() const;
  double bytes() const;
};

// Throws lockstep::Error for a layer type it has no count for, so that a new
// layer is counted before a roofline uses it.
StepCost step_cost(const Graph& graph, const StepCostOptions& options);

}  // namespace lockstep
