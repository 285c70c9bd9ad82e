// Package graph is the analysed form of a pipeline that the backends
// (pipeline/argo, pipeline/local) read: pipeline.Pipeline embeds a Source,
// and a backend reads the definition with Of and analyses it with Analyze,
// the way internal/podspec carries pod settings. It also holds the
// placeholder syntax and the When evaluator both backends share.
package graph
