#include "onnx_layers.h"

#include <map>
#include <optional>

#include "base/error.h"
#include "kernels/pool_geometry.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/pool.h"
#include "onnx_proto.h"

namespace lockstep::app::onnx_export {

namespace {

// An adaptive average pool not yet written: the value before it and the
// sizes, carried through the flatten to the linear layer that absorbs it.
struct PendingPool {
  std::string node;  // the pool's node, for messages
  Shape in, out;     // per sample, [C, H, W]
};

class Translation {
public:
  Translation(onnx::GraphProto& out, const Graph& graph, const StoredTensors& tensors, const std::string& input)
      : out_(out), graph_(graph), tensors_(tensors), input_(input), values_(graph.node_count()) {}

  std::string run() {
    for (size_t n = 0; n < graph_.node_count(); ++n) values_[n] = translate(n);
    LS_CHECK(!pending_.count(static_cast<int>(graph_.node_count()) - 1), refusal(graph_.node_count() - 1),
             "the model ends in an adaptive average pool, which this export writes only folded into a linear layer");
    return values_.back();
  }

private:
  // The name of input `i` of node n's value, and its per-sample shape.
  const std::string& value(size_t n, size_t i) const {
    const int from = graph_.node_inputs(n).at(i);
    return from < 0 ? input_ : values_[from];
  }
  Shape shape(size_t n, size_t i) const {
    const int from = graph_.node_inputs(n).at(i);
    return from < 0 ? graph_.input_shape() : graph_.node_output_shape(from);
  }
  std::string param(size_t n, const std::string& local) const { return graph_.node_name(n) + "." + local; }
  // A checkpoint tensor as an initializer under its own name.
  std::string weight(size_t n, const std::string& local, const std::vector<int64_t>& dims) {
    return add_initializer(out_, param(n, local), dims, tensors_.get(param(n, local), dims));
  }
  std::string refusal(size_t n) const {
    return "checkpoint " + tensors_.path() + ": cannot export to ONNX: " + graph_.layer(n).type() + " '" +
           graph_.node_name(n) + "': ";
  }
  const PendingPool* pending_input(size_t n) const {
    const int from = graph_.node_inputs(n).at(0);
    const auto it = pending_.find(from);
    return it == pending_.end() ? nullptr : &it->second;
  }

  std::string translate(size_t n) {
    const Layer& layer = graph_.layer(n);
    const std::string type = layer.type();
    const std::string& name = graph_.node_name(n);
    for (size_t i = 0; i < graph_.node_inputs(n).size(); ++i)
      LS_CHECK(!pending_.count(graph_.node_inputs(n)[i]) || type == "flatten" || type == "linear", refusal(n),
               "it reads the adaptive average pool '", pending_.at(graph_.node_inputs(n)[i]).node,
               "', which this export writes only folded into a linear layer after a flatten");
    if (type == "conv2d") return conv(n, dynamic_cast<const Conv2d&>(layer));
    if (type == "batchnorm2d") return batch_norm(n, dynamic_cast<const BatchNorm2d&>(layer));
    if (type == "linear") return linear(n, dynamic_cast<const Linear&>(layer));
    if (type == "relu") return add_node(out_, "Relu", {value(n, 0)}, name).output(0);
    if (type == "add") return add_node(out_, "Add", {value(n, 0), value(n, 1)}, name).output(0);
    if (type == "dropout") return value(n, 0);  // the identity in inference
    if (type == "maxpool2d" || type == "avgpool2d") return window_pool(n, dynamic_cast<const WindowPool&>(layer));
    if (type == "global_avgpool") return add_node(out_, "GlobalAveragePool", {value(n, 0)}, name).output(0);
    if (type == "flatten") {
      if (const PendingPool* pool = pending_input(n)) pending_[static_cast<int>(n)] = *pool;
      onnx::NodeProto& node = add_node(out_, "Flatten", {value(n, 0)}, name);
      set_int(node, "axis", 1);
      return name;
    }
    if (type == "adaptive_avgpool2d") {
      const Shape in = shape(n, 0), out = graph_.node_output_shape(n);
      if (in == out) return value(n, 0);
      pending_[static_cast<int>(n)] = {name, in, out};
      return value(n, 0);  // the values before the pool: the linear layer after it pools them
    }
    LS_FAIL(refusal(n), "this layer type has no ONNX form in lockstep's export");
  }

  std::string conv(size_t n, const Conv2d& c) {
    const int64_t in_channels = shape(n, 0)[0];
    std::vector<std::string> inputs = {value(n, 0),
                                       weight(n, "weight", {c.out_channels(), in_channels, c.kernel(), c.kernel()})};
    if (c.has_bias()) inputs.push_back(weight(n, "bias", {c.out_channels()}));
    onnx::NodeProto& node = add_node(out_, "Conv", inputs, graph_.node_name(n));
    set_ints(node, "kernel_shape", {c.kernel(), c.kernel()});
    set_ints(node, "strides", {c.stride(), c.stride()});
    set_ints(node, "pads", {c.padding(), c.padding(), c.padding(), c.padding()});
    return graph_.node_name(n);
  }

  // BatchNormalization on the running statistics; the fused shortcut add and
  // ReLU follow as nodes of their own, the last one named as the layer.
  std::string batch_norm(size_t n, const BatchNorm2d& bn) {
    const std::string& name = graph_.node_name(n);
    const std::vector<int64_t> c = {shape(n, 0)[0]};
    const bool after = bn.fused_add() || bn.fused_relu();
    onnx::NodeProto& node = add_node(
        out_, "BatchNormalization",
        {value(n, 0), weight(n, "weight", c), weight(n, "bias", c), weight(n, "running_mean", c),
         weight(n, "running_var", c)},
        after ? name + ".normalised" : name);
    set_float(node, "epsilon", bn.eps());
    std::string y = node.output(0);
    if (bn.fused_add()) y = add_node(out_, "Add", {y, value(n, 1)}, bn.fused_relu() ? name + ".sum" : name).output(0);
    if (bn.fused_relu()) y = add_node(out_, "Relu", {y}, name).output(0);
    return y;
  }

  std::string window_pool(size_t n, const WindowPool& pool) {
    const PoolWindow& w = pool.window();
    const bool max = pool.type() == "maxpool2d";
    onnx::NodeProto& node = add_node(out_, max ? "MaxPool" : "AveragePool", {value(n, 0)}, graph_.node_name(n));
    set_ints(node, "kernel_shape", {w.kernel, w.kernel});
    set_ints(node, "strides", {w.stride, w.stride});
    set_ints(node, "pads", {w.padding, w.padding, w.padding, w.padding});
    // lockstep's average pool divides by the whole window, padding included.
    if (!max) set_int(node, "count_include_pad", 1);
    return graph_.node_name(n);
  }

  // Gemm: y = x W^T + b. Reading an adaptive pool through a flatten, W is
  // first spread over the pool's windows (folded_weight).
  std::string linear(size_t n, const Linear& l) {
    const int64_t in_features = shape(n, 0)[0];
    const std::vector<int64_t> dims = {l.out_features(), in_features};
    std::string w;
    if (const PendingPool* pool = pending_input(n)) {
      const std::vector<float> folded = folded_weight(tensors_.get(param(n, "weight"), dims), *pool, l.out_features());
      w = add_initializer(out_, param(n, "weight") + ".pooled",
                          {l.out_features(), static_cast<int64_t>(folded.size()) / l.out_features()}, folded);
    } else {
      w = weight(n, "weight", dims);
    }
    // Gemm's bias is optional in ONNX, but not every importer reads it
    // absent: a layer without one gets zeros.
    const std::string b = l.has_bias() ? weight(n, "bias", {l.out_features()})
                                       : add_initializer(out_, param(n, "bias"), {l.out_features()},
                                                         std::vector<float>(l.out_features(), 0.0f));
    onnx::NodeProto& node = add_node(out_, "Gemm", {value(n, 0), w, b}, graph_.node_name(n));
    set_int(node, "transB", 1);
    return graph_.node_name(n);
  }

  // W [O, C*oh*ow] of a linear layer after an adaptive pool from [C, H, W]
  // to [C, oh, ow] as W' [O, C*H*W]: each pooled input's weight shared out
  // over its window, divided by the window's size, as the pool averages.
  static std::vector<float> folded_weight(const std::vector<float>& w, const PendingPool& pool, int64_t outputs) {
    const int64_t channels = pool.in[0], in_h = pool.in[1], in_w = pool.in[2], oh = pool.out[1], ow = pool.out[2];
    const int64_t pooled = channels * oh * ow, full = channels * in_h * in_w;
    std::vector<float> folded(static_cast<size_t>(outputs * full), 0.0f);
    for (int64_t o = 0; o < outputs; ++o)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            const PoolSpan rows = adaptive_pool_span(i, in_h, oh), cols = adaptive_pool_span(j, in_w, ow);
            const float share = w[o * pooled + (c * oh + i) * ow + j] /
                                static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin));
            for (int64_t h = rows.begin; h < rows.end; ++h)
              for (int64_t x = cols.begin; x < cols.end; ++x) folded[o * full + (c * in_h + h) * in_w + x] += share;
          }
    return folded;
  }

  onnx::GraphProto& out_;
  const Graph& graph_;
  const StoredTensors& tensors_;
  const std::string& input_;
  std::vector<std::string> values_;   // each node's output value
  std::map<int, PendingPool> pending_;  // nodes whose value is an adaptive pool not yet written
};

}  // namespace

std::string add_graph_nodes(onnx::GraphProto& out, const Graph& graph, const StoredTensors& tensors,
                            const std::string& input) {
  return Translation(out, graph, tensors, input).run();
}

}  // namespace lockstep::app::onnx_export
