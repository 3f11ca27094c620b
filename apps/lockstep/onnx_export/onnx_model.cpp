#include "onnx_model.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <onnx/checker.h>

#include "base/error.h"
#include "kernels/augment_math.h"
#include "layers/models.h"
#include "onnx_layers.h"
#include "onnx_proto.h"
#include "apps/lockstep/setup.h"
#include "training/metadata_text.h"

namespace lockstep::app::onnx_export {

namespace {

// IR version 7 is the one that came with opset 13; readers of opset 13 read it.
constexpr int64_t kIrVersion = 7;

std::vector<int64_t> dims_of(const Shape& shape) {
  std::vector<int64_t> dims(static_cast<size_t>(shape.rank()));
  for (int i = 0; i < shape.rank(); ++i) dims[i] = shape[i];
  return dims;
}

// Sub and Mul by per-channel constants, in front of the network: lockstep's
// own arithmetic, (x - mean) * (1 / std) (kernels/augment_math.h). The
// constants are [C, 1, 1], broadcast over the batch: OpenCV 4.6's importer
// fails on [1, C, 1, 1] ones (an assertion in its shape code).
std::string add_normalization(onnx::GraphProto& graph, const std::string& input, const data::Normalization& n) {
  const std::vector<int64_t> dims = {static_cast<int64_t>(n.mean.size()), 1, 1};
  std::vector<float> inv_std;
  for (float s : n.std) inv_std.push_back(augment_inv_std(s));
  const std::string mean = add_initializer(graph, "input_mean", dims, n.mean);
  const std::string scale = add_initializer(graph, "input_inv_std", dims, inv_std);
  const std::string centred = add_node(graph, "Sub", {input, mean}, "input_centred").output(0);
  return add_node(graph, "Mul", {centred, scale}, "input_normalised").output(0);
}

void put(onnx::ModelProto& model, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto& entry = *model.add_metadata_props();
  entry.set_key(key);
  entry.set_value(value);
}

std::string normalization_text(const data::Normalization& n, bool in_graph) {
  if (n.mean.empty()) return "none: the network reads the pixels as they are";
  if (in_graph) return "in the graph: (x - mean) / std per channel, before the network";
  return "not in the graph: apply (x - input_mean) / input_std per channel first";
}

}  // namespace

onnx::ModelProto onnx_model(const LoadedCheckpoint& checkpoint, const std::string& checkpoint_path,
                            bool include_preprocessing) {
  std::unique_ptr<Graph> graph;
  try {
    graph = graph_from_spec(checkpoint.info.model_spec);
  } catch (const Error& e) {
    LS_FAIL("checkpoint ", checkpoint_path, " names a model this lockstep cannot build: ", e.what());
  }
  const data::Normalization norm = checkpoint_normalization(checkpoint.info.extra);
  const bool fold = include_preprocessing && !norm.mean.empty();
  // The class names are metadata, which the checkpoint's checksum does not
  // cover: an edited list would label every output with another's name.
  LS_CHECK(checkpoint.info.class_names.empty() ||
               static_cast<int64_t>(checkpoint.info.class_names.size()) == graph->num_classes(),
           "checkpoint ", checkpoint_path, " has damaged metadata: ", checkpoint.info.class_names.size(),
           " class names for its model's ", graph->num_classes(), " classes");

  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name(kProducer);
  onnx::OperatorSetIdProto& opset = *model.add_opset_import();
  opset.set_domain("");
  opset.set_version(kOpset);
  model.set_doc_string("lockstep " + checkpoint.info.model_spec + ", exported for inference from " + checkpoint_path);

  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name(checkpoint.info.model_spec);
  set_batched_float(*g.add_input(), "image", dims_of(graph->input_shape()));
  const std::string start = fold ? add_normalization(g, "image", norm) : "image";
  const std::string logits = add_graph_nodes(g, *graph, StoredTensors(checkpoint, checkpoint_path), start);
  // The last node is the classifier, named by its node; "logits" is the
  // name a caller looks for, so it is passed on under that name.
  add_node(g, "Identity", {logits}, "logits");
  onnx::NodeProto& softmax = add_node(g, "Softmax", {"logits"}, "probabilities");
  set_int(softmax, "axis", 1);
  set_batched_float(*g.add_output(), "probabilities", {graph->num_classes()});

  Metadata meta;
  put_class_names(meta, checkpoint.info.class_names);
  meta["lockstep_model"] = checkpoint.info.model_spec;
  const Shape in = graph->input_shape();
  meta["input_size"] = std::to_string(in[0]) + "x" + std::to_string(in[1]) + "x" + std::to_string(in[2]);
  meta["input_normalization"] = normalization_text(norm, fold);
  if (!fold && !norm.mean.empty()) {
    meta["input_mean"] = nlohmann::json(norm.mean).dump();
    meta["input_std"] = nlohmann::json(norm.std).dump();
  }
  // How predict fits an image to the input (setup.h, set_image_fit).
  data::DataOptions fit;
  set_image_fit(fit, checkpoint_setting(checkpoint.info.extra, "augment"));
  char share[32];
  std::snprintf(share, sizeof share, "%g%%", 100.0 * fit.test_center_crop);
  meta["image_fit"] = fit.test_center_crop > 0.0
                          ? std::string("the centred window over ") + share +
                                " of the image's shorter side, aspect kept, resized to the input"
                          : "the whole image, resized (stretched) to the input";
  const std::string precision = checkpoint_setting(checkpoint.info.extra, "precision");
  if (!precision.empty()) meta["trained_precision"] = precision;
  for (const auto& [key, value] : meta) put(model, key, value);

  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    LS_FAIL("ONNX's checker refuses the model exported from ", checkpoint_path, " (a fault of lockstep's export): ",
            e.what());
  }
  return model;
}

}  // namespace lockstep::app::onnx_export
