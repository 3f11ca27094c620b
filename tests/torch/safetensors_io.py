"""Writes and reads float32 tensors in the safetensors format, by hand.

The layout: an 8-byte little-endian header length, a JSON header giving each
tensor's dtype, shape and byte range in the data block, then the raw
little-endian data. Debian's PyTorch ships without the safetensors package, and
the format is simple enough that writing it here keeps the test independent of
our own C++ writer (training/safetensors.cpp), which it exercises from the other side.
"""

import json
import os
import struct

import torch


def write_safetensors(path, tensors, metadata=None):
    """tensors: an ordered dict name -> torch tensor (any float dtype, any device)."""
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        data = t.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)  # the data block starts 8-byte aligned
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def read_safetensors(path):
    """Returns (an ordered dict name -> float32 numpy array, the metadata dict)
    of a file write_safetensors wrote."""
    import collections

    import numpy

    with open(path, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length])
    metadata = header.pop("__metadata__", {})
    data = blob[8 + length:]
    tensors = collections.OrderedDict()
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        tensors[name] = numpy.frombuffer(data[begin:end], dtype="<f4").reshape(entry["shape"])
    return tensors, metadata
