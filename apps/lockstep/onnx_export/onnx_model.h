#pragma once
// A lockstep checkpoint as an ONNX model for inference (opset 13, which
// ONNX Runtime, TensorRT and OpenCV 4.6's dnn module all read):
//   input          "image", float [batch, C, H, W]: the pixels in [0, 1], in
//                  the image's channel order (RGB, or one grey channel), the
//                  batch dimension left free;
//   output         "probabilities", float [batch, classes]: the softmax of
//                  the logits (the value "logits" before it);
//   normalisation  with include_preprocessing, (x - mean) / std per channel
//                  as Sub and Mul nodes in front of the network; without,
//                  the mean and std in the metadata, for the caller to apply;
//   metadata_props lockstep_model (the spec), class_names (a JSON array;
//                  class_names_hex beside it when a name is not UTF-8),
//                  input_size, input_normalization, input_mean, input_std
//                  (without the nodes only), image_fit, trained_precision.
// FP32 throughout: a bf16-trained checkpoint keeps FP32 master weights, which
// are what is written. Every tensor the model needs is checked first
// (stored_tensors.h), and the model is checked by ONNX's own checker.
#include <onnx/onnx_pb.h>

#include <string>

#include "training/checkpoint.h"

namespace lockstep::app::onnx_export {

constexpr int kOpset = 13;
constexpr const char* kProducer = "lockstep";

onnx::ModelProto onnx_model(const LoadedCheckpoint& checkpoint, const std::string& checkpoint_path,
                            bool include_preprocessing);

}  // namespace lockstep::app::onnx_export
