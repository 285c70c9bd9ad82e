package tune

// SpaceOf gives the external tests an experiment's search space, which
// the builder keeps to itself.
func SpaceOf(e *Experiment) []Param { return e.space() }

// LocalAlgorithms are the algorithm names Local.Algorithm accepts.
var LocalAlgorithms = localAlgorithms
