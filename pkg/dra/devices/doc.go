// Package devices models the devices that DRA drivers publish on a node of a given EC2 instance type: the NVIDIA
// GPU driver (gpu.nvidia.com: whole GPUs and, where the GPU supports it, MIG partitions as partitionable devices) and
// the EFA interfaces of the dranet driver (dra.net). It turns the instance type catalog, plus operator overrides,
// into the ResourceSlices such a node would carry. It is pure Go: no client-go, no simulator code.
package devices
