// Strict checkpoints: safetensors files built byte by byte that a lax reader
// accepts. Each is refused, naming the file and the problem, even when the
// checksum in the metadata is right.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "training/checkpoint.h"
#include "training/safetensors.h"

using namespace lockstep;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

struct TempFile {
  fs::path path = fs::temp_directory_path() / ("lockstep-strict-" + std::to_string(::getpid()) + ".safetensors");
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::string str() const { return path.string(); }
};

// 8-byte little-endian header length, the header text as given, then `floats` as the data.
void write_safetensors_bytes(const std::string& path, const std::string& header, const std::vector<float>& floats) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(uint64_t(header.size()) >> (8 * i));
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(floats.data()), floats.size() * sizeof(float));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string tensor(const std::string& name, const std::string& shape, const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

// Checkpoint metadata with a right CRC-32 for the given tensors in offset order.
std::string checkpoint_metadata(const std::vector<std::vector<float>>& tensors_in_order, const std::string& epoch,
                                const std::string& step) {
  SafetensorsFile for_crc;
  for (const auto& values : tensors_in_order)
    for_crc.tensors.push_back({"t", {Shape{static_cast<int64_t>(values.size())}, values}});
  return "\"__metadata__\":{\"format\":\"lockstep-checkpoint-1\",\"model\":\"m\",\"class_names\":\"[\\\"a\\\"]\","
         "\"epoch\":\"" + epoch + "\",\"step\":\"" + step + "\",\"batch_in_epoch\":\"0\",\"seed\":\"1\",\"crc32\":\"" +
         tensor_data_crc32(for_crc) + "\"}";
}

}  // namespace

TEST_CASE("strict safetensors: overlapping tensors, repeated keys, fractional offsets, trailing bytes", "[checkpoint][reliability]") {
  TempFile file;
  const std::string path = file.str();
  const std::vector<float> three = {1, 2, 3};

  SECTION("a well-formed file still reads") {
    write_safetensors_bytes(path, "{" + tensor("a", "[2]", "[0,8]") + "," + tensor("b", "[1]", "[8,12]") + "}", three);
    SafetensorsFile read = read_safetensors(path);
    REQUIRE(read.at("a").values == std::vector<float>{1, 2});
    REQUIRE(read.at("b").values == std::vector<float>{3});
  }
  SECTION("overlapping tensors") {
    write_safetensors_bytes(path, "{" + tensor("a", "[2]", "[0,8]") + "," + tensor("b", "[2]", "[4,12]") + "}", three);
    REQUIRE_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("tensors a and b overlap"));
  }
  SECTION("a repeated key") {
    write_safetensors_bytes(path, "{" + tensor("a", "[2]", "[0,8]") + "," + tensor("a", "[2]", "[0,8]") + "}", {1, 2});
    REQUIRE_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("'a' appears more than once"));
  }
  SECTION("a repeated metadata key") {
    write_safetensors_bytes(path, "{\"__metadata__\":{\"epoch\":\"1\",\"epoch\":\"2\"}," + tensor("a", "[1]", "[0,4]") + "}", {1});
    REQUIRE_THROWS_WITH(read_safetensors(path, false), Contains(path) && Contains("'epoch' appears more than once"));
  }
  SECTION("offsets that are not integers") {
    write_safetensors_bytes(path, "{" + tensor("a", "[3]", "[0.0,12.0]") + "}", three);
    REQUIRE_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("tensor a has a data offset 0.0") &&
                                                    Contains("not a non-negative integer"));
    write_safetensors_bytes(path, "{" + tensor("a", "[3]", "[\"0\",12]") + "}", three);
    REQUIRE_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("not a non-negative integer"));
    write_safetensors_bytes(path, "{" + tensor("a", "[-3]", "[0,12]") + "}", three);
    REQUIRE_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("has an extent -3"));
  }
  SECTION("bytes after the last tensor") {
    write_safetensors_bytes(path, "{" + tensor("a", "[2]", "[0,8]") + "}", three);
    REQUIRE_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("4 bytes after the last tensor (a)"));
    REQUIRE_THROWS_WITH(read_safetensors(path, false), Contains("after the last tensor"));
  }
  SECTION("bytes between tensors") {
    write_safetensors_bytes(path, "{" + tensor("a", "[1]", "[0,4]") + "," + tensor("b", "[1]", "[8,12]") + "}", three);
    REQUIRE_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("bytes 4 to 8 of the data belong to no tensor"));
  }
  SECTION("a damaged JSON header names the file, not only the JSON library") {
    write_safetensors_bytes(path, "{\"a\":", {});
    REQUIRE_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("not valid JSON") && !Contains("json.exception"));
  }
  SECTION("a number past a double's range is a damaged header, not an escaping library exception") {
    // Found by fuzz_safetensors: nlohmann::json throws out_of_range, not parse_error, for 87e877.
    write_safetensors_bytes(path, "{" + tensor("a", "[87e877]", "[0,12]") + "}", three);
    REQUIRE_THROWS_AS(read_safetensors(path), Error);
    REQUIRE_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("damaged header") &&
                                                    Contains("out of any number's range"));
  }
  SECTION("a folder") {
    const std::string folder = fs::temp_directory_path().string();
    REQUIRE_THROWS_WITH(read_safetensors(folder), Contains(folder) && Contains("is a folder"));
  }
}

TEST_CASE("strict checkpoints: overlap, negative epoch or step, and junk numbers are refused despite a right checksum", "[checkpoint][reliability]") {
  TempFile file;
  const std::string path = file.str();
  const std::string a = tensor("a", "[2]", "[0,8]");

  SECTION("a right checksum is not enough when tensors overlap") {
    const std::string b = tensor("b", "[2]", "[4,12]");
    write_safetensors_bytes(path, "{" + checkpoint_metadata({{1, 2}, {2, 3}}, "1", "5") + "," + a + "," + b + "}", {1, 2, 3});
    REQUIRE_THROWS_WITH(read_checkpoint(path), Contains(path) && Contains("overlap"));
  }
  SECTION("the metadata of a good file reads") {
    write_safetensors_bytes(path, "{" + checkpoint_metadata({{1, 2}}, "1", "5") + "," + a + "}", {1, 2});
    LoadedCheckpoint ck = read_checkpoint(path);
    REQUIRE(ck.info.epoch == 1);
    REQUIRE(ck.info.step == 5);
  }
  SECTION("a negative epoch") {
    write_safetensors_bytes(path, "{" + checkpoint_metadata({{1, 2}}, "-1", "5") + "," + a + "}", {1, 2});
    REQUIRE_THROWS_WITH(read_checkpoint(path), Contains(path) && Contains("'epoch' is \"-1\", not a non-negative integer"));
    REQUIRE_THROWS_WITH(read_checkpoint_info(path), Contains(path) && Contains("'epoch'"));
  }
  SECTION("a negative step") {
    write_safetensors_bytes(path, "{" + checkpoint_metadata({{1, 2}}, "1", "-7") + "," + a + "}", {1, 2});
    REQUIRE_THROWS_WITH(read_checkpoint(path), Contains(path) && Contains("'step' is \"-7\""));
  }
  SECTION("a step with junk after the number, or beyond 64 bits") {
    write_safetensors_bytes(path, "{" + checkpoint_metadata({{1, 2}}, "1", "12abc") + "," + a + "}", {1, 2});
    REQUIRE_THROWS_WITH(read_checkpoint(path), Contains(path) && Contains("'step' is \"12abc\""));
    write_safetensors_bytes(path, "{" + checkpoint_metadata({{1, 2}}, "99999999999999999999", "1") + "," + a + "}", {1, 2});
    REQUIRE_THROWS_WITH(read_checkpoint(path), Contains(path) && Contains("'epoch'") && !Contains("stoll"));
  }
}
