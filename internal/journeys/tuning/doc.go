// Package tuning runs a cube tune Experiment on the test cluster's Katib
// v0.19.0 (controller, db-manager on PostgreSQL, the goptuna suggestion
// service and the file metrics collector, all built from Katib's module):
// its trials are batch Jobs whose Python program prints the objective, and
// the experiment runs to Succeeded. It has no non-test code.
//
// Katib's Python suggestion services (hyperopt, optuna, skopt: tpe from
// hyperopt, grid, multivariate-tpe, bayesianoptimization, hyperband, pbt)
// and its early-stopping service are not built here: those algorithms stay
// schema-checked in package tune.
package tuning
