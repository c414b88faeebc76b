// Package openpai holds the OpenPAI service graph that stowage knows (today
// only v1.5.0) and reduces it to the smallest set of services that keeps the
// features a site asks for.
//
// The facts come from microsoft/pai at tag v1.5.0 (commit f67d4ef1): every
// src/<service>/deploy/service.yaml whose cluster-type contains k8s (27
// services), their prerequisite lists, the node roles derived from their
// deploy-rules, and the images their templates pull. Sizes come from the
// image listing in issue #5381. The graph is written as Go literals in
// v150.go; nothing is read at run time.
//
// Reduce starts from the roots of the selected features plus the services
// the user keeps, closes the set over effective prerequisites, and refuses
// drops that would break that closure. The result carries the start order,
// the paictl arguments (deployment/serviceCmd.py -n) and the concrete image
// references per node role.
package openpai
