// Package requirements evaluates node selector requirements against the labels of an instance type, offering or
// image. Keys the evaluator does not know are ignored (a NodePool's own labels say nothing about an instance
// type); known keys are evaluated even when the label is absent, so "gpu-count Exists" rejects a CPU-only type.
package requirements
