#pragma once
// A lockstep Graph's layers as ONNX nodes, in inference form: batch norm on
// its running statistics (BatchNormalization, then Add and Relu where the
// layer fuses them), dropout left out, linear layers as Gemm. An adaptive
// average pool is folded into the weights of the linear layer that reads it
// through a flatten (tv-vgg16's): the pool, the flatten and the product are
// one linear map, and ONNX has no adaptive pool that every runtime reads.
// A layer with no ONNX form here is refused, naming it.
#include <onnx/onnx_pb.h>

#include <string>

#include "layers/graph.h"
#include "stored_tensors.h"

namespace lockstep::app::onnx_export {

// Appends the nodes of `graph` (as built from the checkpoint's spec; it
// need not be finalised) to `out`, reading its images from the value
// `input` and its weights from `tensors`. Returns the name of the logits value.
std::string add_graph_nodes(onnx::GraphProto& out, const Graph& graph, const StoredTensors& tensors,
                            const std::string& input);

}  // namespace lockstep::app::onnx_export
