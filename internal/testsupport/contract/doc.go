// Package contract holds what an engine cube cannot run here accepts, as
// facts read from the engine's source at the version cube pins, and checks
// what cube renders for that engine against them.
//
// The engines behind llm, tune, market, serve, ops and label (LLaMA-Factory,
// verl, Katib's suggestion services, lm-evaluation-harness, TEI, the model
// hubs' download tools, Label Studio, the exporters) run in the tests as
// stand-ins, and a stand-in accepts anything. A contract does not: every key,
// flag, value, exclusion and image content it lists cites the upstream file it
// was read from, and a rendered configuration that uses anything else fails
// the package's contract test.
//
// A contract is a tab-separated file under the package's testdata/contracts:
//
//	# comments and blank lines are ignored
//	engine	LLaMA-Factory	v0.9.5	hiyouga/LLaMA-Factory@7af909522a95
//	key	stage	pt,sft,rm,ppo,dpo,kto	src/llamafactory/hparams/finetuning_args.py
//	excludes	val_size	eval_dataset	src/llamafactory/hparams/data_args.py
//	image	hiyouga/llamafactory:0.9.5	trl=0.24.0	docker/docker-cuda/Dockerfile
//
// Each line is rule, subject, value and the cited file (a path in the engine's
// repository, optionally with ":line"); the rules are listed with [Rule].
// Check a rendered configuration with [Contract.CheckKeys] (flat key/value
// files such as LLaMA-Factory's YAML or verl's Hydra overrides),
// [Contract.CheckArgs] (command lines), [Contract.CheckEnv], [Contract.CheckSet]
// (a set that must hold every listed name) and [Contract.CheckImage] (what a
// default image must contain). Every check returns all its findings at once,
// each naming the fact and its citation.
//
//	c, err := contract.Load("testdata/contracts/llamafactory.tsv")
//	...
//	if err := c.CheckKeys("train.yaml", rendered); err != nil {
//		t.Error(err)
//	}
package contract
