// Package instancetype turns EC2 instance type descriptions into cloudprovider.InstanceTypes: the pure capacity
// and label arithmetic (Compute, reusable offline with pkg/catalog data), and a Provider that reads
// DescribeInstanceTypes, zone offerings and prices through the AWS SDK and caches them with a TTL.
package instancetype
