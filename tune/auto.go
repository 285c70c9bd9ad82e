package tune

// AlgorithmAuto is the default: the algorithm is chosen from the search
// space, the budget and the parallelism.
const AlgorithmAuto = "auto"

// Auto chooses the algorithm from the search space, the budget and the
// parallelism (the default of NewLocal and New).
func Auto() Algorithm { return Algorithm{name: AlgorithmAuto} }

// autoRules are Auto's settings: only the seed, which the Katib algorithm
// it maps to takes too.
var autoRules = map[string]settingRule{"random_state": numpySeed}
