#pragma once
// Small helpers over ONNX's own protobuf classes (Debian's libonnx-dev,
// onnx/onnx_pb.h): nodes with attributes, FP32 initializers, float values
// with a dynamic batch dimension. Nothing here knows lockstep's layers.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::app::onnx_export {

// A node computing `output` from `inputs` with operator `op` of the default domain.
onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op, const std::vector<std::string>& inputs,
                          const std::string& output);
void set_ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void set_int(onnx::NodeProto& node, const std::string& name, int64_t value);
void set_float(onnx::NodeProto& node, const std::string& name, float value);

// An FP32 constant `name` of shape `dims`; returns its name.
std::string add_initializer(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values);

// A float value [batch, dims...] whose first dimension is named, not fixed:
// the model takes any batch size.
void set_batched_float(onnx::ValueInfoProto& value, const std::string& name, const std::vector<int64_t>& dims);

}  // namespace lockstep::app::onnx_export
