// Package instanceprofilegc deletes the instance profiles Dovetail created for EC2NodeClasses (those naming a
// spec.role) once no node class and no instance needs them, every 30 minutes, as Karpenter's instance profile
// garbage collection does; it does not run with ISOLATED_VPC=true (IAM is a public endpoint).
package instanceprofilegc
