/**
 * The device layer of the GPU-validation mode: the operations a replay and a calibration perform on
 * real CUDA memory ({@link kvsim.gpu.device.GpuDevice}), implemented on CUDA's driver API through
 * JCuda. Only {@code kvsim.gpu} and the GPU commands use it; nothing else in kvsim needs a GPU, the
 * driver or JCuda's natives, to run or to test.
 */
package kvsim.gpu.device;
