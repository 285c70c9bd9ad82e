// Package podspec is the implementation behind package pod: the state of
// the pod settings every builder shares, and the plumbing cube's own
// packages need to render them — binding a builder (Init), the pod template
// (Template), the problems recorded while chaining (SettingErrors), object
// metadata and labels, and reads of the settings. Users never see it: pod's
// exported Builder and Meta hold it in a Handle, and only packages of this
// module can import it and call Of.
//
// Inside a workload package:
//
//	type Job struct{ pod.Builder[Job] }
//
//	func NewJob(name string) *Job {
//		j := &Job{}
//		podspec.Of(&j.Handle).Init(j, "job", name)
//		return j
//	}
//
//	tmpl, errs := podspec.Of(&j.Handle).Template(path, podspec.TemplateOptions{Container: "main"})
package podspec
