// Package resolve turns an EC2NodeClass's selectors into AWS objects: subnets, security groups, AMIs (aliases
// through SSM parameters, other terms through DescribeImages) and the instance profile (created from the role
// when needed). Results are what the node class status controller writes into status.
package resolve
