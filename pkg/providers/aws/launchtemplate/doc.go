// Package launchtemplate renders node bootstrap user data (AL2023 nodeadm MIME, AL2 bootstrap.sh, Bottlerocket
// TOML, merged with the node class's own userData) and creates, caches and deletes the EC2 launch templates
// that carry it together with the image, volumes, metadata options, security groups and instance profile.
package launchtemplate
