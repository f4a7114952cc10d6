// Package requirements evaluates node selector requirements (In, NotIn, Exists, DoesNotExist, Gt, Lt) against
// labels: a node's, an instance type's, an offering's or an image's. It is the one implementation shared by the
// provisioner, drift detection, the AWS provider and the fake cloud provider; the scheduler core keeps its own
// richer Requirements type (pkg/scheduling) for intersecting requirements.
package requirements
