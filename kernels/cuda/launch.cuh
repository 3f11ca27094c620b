#pragma once
// LS_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...): every kernel
// launch in kernels/cuda/ is written this way. The kernel comes last so that
// template arguments with commas pass through; the emulated build's
// force-included header (emu/kernel/emu_kernel.h) defines LS_LAUNCH first.
#ifndef LS_LAUNCH
#define LS_LAUNCH(grid, block, shared_bytes, stream, ...) __VA_ARGS__<<<grid, block, shared_bytes, stream>>>
#endif
