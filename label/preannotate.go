package label

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// PreannotateResult counts what Preannotate did.
type PreannotateResult struct {
	// Predicted tasks got a new prediction; Skipped already had one of
	// the backend's model version.
	Predicted, Skipped int
}

// Preannotate pre-annotates a whole project from the client side: every
// task without a prediction of the backend's model version gets one,
// posted with CreatePrediction. Failures are collected per task and
// returned together; the tasks that succeeded stay predicted.
func Preannotate(ctx context.Context, c *Client, project int, b *Backend) (PreannotateResult, error) {
	var res PreannotateResult
	if !b.usable() {
		return res, errNilBackend
	}
	cfg, err := c.ProjectConfig(ctx, project)
	if err != nil {
		return res, fmt.Errorf("preannotate project %d: %w", project, err)
	}
	tasks, err := c.ListTasks(ctx, project)
	if err != nil {
		return res, fmt.Errorf("preannotate project %d: %w", project, err)
	}
	version := b.Version(ctx)
	var errs []error
	for _, t := range tasks {
		if slices.ContainsFunc(t.Predictions, func(p Prediction) bool { return p.ModelVersion == version }) {
			res.Skipped++
			continue
		}
		preds, err := b.Predict(ctx, cfg, []Task{t})
		if err == nil {
			_, err = c.CreatePrediction(ctx, preds[0])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("preannotate task %d: %w", t.ID, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		res.Predicted++
	}
	return res, errors.Join(errs...)
}
