package contract_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/contract"
)

const sample = "# a sample\n" +
	"engine\tTool\tv1.2\tacme/tool@abc123\n" +
	"key\tstage\tsft,dpo\tsrc/args.py\n" +
	"key\tval_size\t\tsrc/data_args.py\n" +
	"key\teval_dataset\t\tsrc/data_args.py\n" +
	"key\tquantization_bit\t4,8\tsrc/model_args.py\n" +
	"key\tdeepspeed\t\tsrc/args.py\n" +
	"excludes\tval_size\teval_dataset\tsrc/data_args.py:88\n" +
	"excludes\tquantization_bit=8\tdeepspeed=*z3*\tsrc/quantization.py\n" +
	"requires\tstage=dpo\tval_size\tsrc/made_up.py\n" +
	"flag\t--include\tvalues\tcli/download.py\n" +
	"flag\t--repo-type\tvalue:model,dataset\tcli/download.py\n" +
	"flag\t--quiet\tbool\tcli/download.py\n" +
	"flag\t--header\trepeat\tcli/download.py\n" +
	"env\tHF_HUB_OFFLINE\t0,1\tconstants.py\n" +
	"set\talpaca/kto\tprompt,query,response,kto_tag\tdata/converter.py\n" +
	"image\tacme/tool:1\ttrl=0.24.0\tdocker/Dockerfile\n" +
	"image\tacme/tool:1\t!bitsandbytes\tdocker/Dockerfile\n" +
	"image\tacme/tool:1\tdeepspeed\tdocker/Dockerfile\n" +
	"needs\tstage=ppo\ttrl>=0.8.6,<=0.9.6\ttrain/ppo/trainer.py\n" +
	"needs\tquantization_bit\tbitsandbytes\tquantization.py\n" +
	"needs\t*\tdeepspeed\ttrain.py\n"

func load(t *testing.T) *contract.Contract {
	t.Helper()
	c, err := contract.Parse("sample.tsv", sample)
	require.NoError(t, err)
	return c
}

func TestParseReadsEngineAndFacts(t *testing.T) {
	c := load(t)
	assert.Equal(t, []string{"Tool", "v1.2", "acme/tool@abc123"}, []string{c.Name, c.Version, c.Source})
	assert.Len(t, c.Facts, 20)
	f, ok := c.Fact(contract.Excludes, "val_size")
	require.True(t, ok)
	assert.Equal(t, contract.Fact{Rule: contract.Excludes, Subject: "val_size", Value: "eval_dataset", Cite: "src/data_args.py:88", Line: 8}, f)
}

func TestParseRefusesEveryMalformedLineAtOnce(t *testing.T) {
	_, err := contract.Parse("bad.tsv", "key\tx\t\tsrc/a.py\n"+
		"engine\tTool\tv1\tacme/tool@1\n"+
		"key\tstage\tsft\t\n"+
		"frob\tx\ty\ta.py\n"+
		"key\tstage\n"+
		"flag\tinclude\tvalue\tcli.py\n"+
		"flag\t--include\tmany\tcli.py\n"+
		"key\tdup\t\ta.py\n"+
		"key\tdup\t\ta.py\n"+
		"needs\t*\t>=1\ta.py\n"+
		"image\tx:1\tpkg<2\ta.py\n"+
		"excludes\t=x\tb\ta.py\n")
	require.Error(t, err)
	for _, want := range []string{
		"bad.tsv:1: the first fact must be the engine fact",
		"bad.tsv:3: key stage: cites no upstream file",
		`bad.tsv:4: unknown rule "frob"`,
		"bad.tsv:5: want 4 tab-separated columns",
		"bad.tsv:6: flag include: a flag begins with -",
		`bad.tsv:7: flag --include: arity "many"`,
		"bad.tsv:9: key dup is stated again (first at line 8)",
		`bad.tsv:10: needs *: need ">=1" names no package`,
		`bad.tsv:11: image x:1: image content "pkg<2"`,
		`bad.tsv:12: excludes =x: condition "=x" names no key`,
	} {
		assert.ErrorContains(t, err, want)
	}
	_, err = contract.Parse("empty.tsv", "# nothing\n")
	assert.EqualError(t, err, "empty.tsv: no engine fact")
}

func TestCheckKeys(t *testing.T) {
	c := load(t)
	require.NoError(t, c.CheckKeys("train.yaml", map[string]string{"stage": "dpo", "val_size": "0.1", "quantization_bit": "8", "deepspeed": "ds_z2.json"}))
	err := c.CheckKeys("train.yaml", map[string]string{
		"stage": "orpo", "typo": "1", "val_size": "0.1", "eval_dataset": "x",
		"quantization_bit": "8", "deepspeed": "/ds/ds_z3_config.json",
	})
	require.Error(t, err)
	for _, want := range []string{
		`train.yaml: Tool v1.2: stage="orpo" is not one of sft,dpo (sample.tsv:3, from src/args.py)`,
		"train.yaml: Tool v1.2: typo is not a key the engine reads",
		"val_size and eval_dataset together are refused (sample.tsv:8, from src/data_args.py:88)",
		"quantization_bit=8 and deepspeed=*z3* together are refused",
	} {
		assert.ErrorContains(t, err, want)
	}
	assert.ErrorContains(t, c.CheckKeys("t", map[string]string{"stage": "dpo"}), "stage=dpo requires val_size")
}

func TestCheckArgs(t *testing.T) {
	c := load(t)
	pos, err := c.CheckArgs("hf download", []string{"org/model", "--include", "*.json", "*.safetensors", "--repo-type=model", "--quiet", "--header", "a", "--header", "b", "-1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"org/model", "-1"}, pos)

	_, err = c.CheckArgs("hf download", []string{"--include", "*.json", "--include", "*.bin", "--repo-type", "space", "--quiet=1", "--nope", "--repo-type"})
	require.Error(t, err)
	for _, want := range []string{
		"--include is given more than once; the parser keeps only the last",
		`--repo-type="space" is not one of model,dataset`,
		"--quiet takes no value",
		"--nope is not a flag the engine defines",
		"--repo-type needs a value",
	} {
		assert.ErrorContains(t, err, want)
	}
}

func TestCheckEnvAndSet(t *testing.T) {
	c := load(t)
	require.NoError(t, c.CheckEnv("env", map[string]string{"HF_HUB_OFFLINE": "1"}))
	err := c.CheckEnv("env", map[string]string{"HF_HUB_OFFLINE": "yes", "HF_NOPE": "1"})
	assert.ErrorContains(t, err, `HF_HUB_OFFLINE="yes" is not one of 0,1`)
	assert.ErrorContains(t, err, "HF_NOPE is not a variable the engine reads")

	require.NoError(t, c.CheckSet("dataset_info", "alpaca/kto", []string{"kto_tag", "prompt", "query", "response", "system"}))
	assert.ErrorContains(t, c.CheckSet("dataset_info", "alpaca/kto", []string{"kto_tag"}), "alpaca/kto lacks prompt, query, response")
	assert.ErrorContains(t, c.CheckSet("dataset_info", "alpaca/ppo", nil), "the contract states no set alpaca/ppo")
}

func TestCheckImage(t *testing.T) {
	c := load(t)
	require.NoError(t, c.CheckImage("sft", "acme/tool:1", map[string]string{"stage": "sft"}))
	err := c.CheckImage("ppo", "acme/tool:1", map[string]string{"stage": "ppo", "quantization_bit": "4"})
	require.Error(t, err)
	assert.ErrorContains(t, err, "stage=ppo needs trl>=0.8.6,<=0.9.6; acme/tool:1 has 0.24.0 (docker/Dockerfile)")
	assert.ErrorContains(t, err, "quantization_bit needs bitsandbytes, which acme/tool:1 does not contain")
	assert.ErrorContains(t, c.CheckImage("x", "acme/other:2", nil), "nothing is recorded of image acme/other:2")
}

func TestFlatten(t *testing.T) {
	got := contract.Flatten(map[string]any{"a": map[string]any{"b": "x", "c": []any{1.5, true, nil}}, "d": "y"})
	assert.Equal(t, map[string]string{"a.b": "x", "a.c.0": "1.5", "a.c.1": "true", "a.c.2": "null", "d": "y"}, got)
}

// TestEveryContractInTheModuleLoads keeps the contracts of every package
// well-formed: each cites its files and begins with its engine.
func TestEveryContractInTheModuleLoads(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".tsv") && filepath.Base(filepath.Dir(p)) == "contracts" {
			files = append(files, p)
		}
		return nil
	}))
	require.NotEmpty(t, files, "the packages keep their contracts in testdata/contracts")
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, root+string(os.PathSeparator)), func(t *testing.T) {
			c, err := contract.Load(f)
			require.NoError(t, err)
			assert.NotEmpty(t, c.Facts)
			assert.True(t, checkedBy(t, f), "no test of the package that keeps %s names it: a contract nothing checks is no contract", f)
		})
	}
}

// checkedBy reports whether a test file of the package that keeps a
// contract uses package contract and names the contract (its path, or its
// name without .tsv quoted).
func checkedBy(t *testing.T, contractFile string) bool {
	t.Helper()
	pkg := filepath.Dir(filepath.Dir(filepath.Dir(contractFile)))
	tests, err := filepath.Glob(filepath.Join(pkg, "*_test.go"))
	require.NoError(t, err)
	for _, test := range tests {
		src, err := os.ReadFile(test)
		require.NoError(t, err)
		stem := strings.TrimSuffix(filepath.Base(contractFile), ".tsv")
		names := strings.Contains(string(src), "contracts/"+stem+".tsv") || strings.Contains(string(src), `"`+stem+`"`)
		if names && strings.Contains(string(src), "contract.") {
			return true
		}
	}
	return false
}
