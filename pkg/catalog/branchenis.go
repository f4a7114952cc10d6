package catalog

// BranchENIs returns the branch network interfaces an instance type offers pods that have security groups of
// their own (vpc.amazonaws.com/pod-eni), or 0 when the type is not trunking-compatible or unknown. EC2 does not
// report the figure; the table (zz_generated.branchenis.go, hack/gen-branchenis) is the VPC resource controller's.
func BranchENIs(instanceType string) int { return branchENIs[instanceType] }
