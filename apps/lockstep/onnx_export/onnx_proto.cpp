#include "onnx_proto.h"

#include <bit>
#include <cstring>

#include "base/error.h"

namespace lockstep::app::onnx_export {

// ONNX stores raw tensor data little-endian; the bytes are copied as they lie.
static_assert(std::endian::native == std::endian::little, "the ONNX export copies floats as little-endian bytes");

onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op, const std::vector<std::string>& inputs,
                          const std::string& output) {
  onnx::NodeProto& node = *graph.add_node();
  node.set_op_type(op);
  node.set_name(output);  // each node has one output here, so its name names the node too
  for (const std::string& input : inputs) node.add_input(input);
  node.add_output(output);
  return node;
}

void set_ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
}

void set_int(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
}

void set_float(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
}

std::string add_initializer(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  LS_CHECK(count == static_cast<int64_t>(values.size()), "ONNX export: constant ", name, " has ", values.size(),
           " values for ", count, " elements");
  onnx::TensorProto& t = *graph.add_initializer();
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  t.set_raw_data(std::move(bytes));
  return name;
}

void set_batched_float(onnx::ValueInfoProto& value, const std::string& name, const std::vector<int64_t>& dims) {
  value.set_name(name);
  onnx::TypeProto_Tensor& tensor = *value.mutable_type()->mutable_tensor_type();
  tensor.set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto& shape = *tensor.mutable_shape();
  shape.add_dim()->set_dim_param("batch");
  for (int64_t d : dims) shape.add_dim()->set_dim_value(d);
}

}  // namespace lockstep::app::onnx_export
