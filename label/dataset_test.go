package label_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/llm"
)

func pairTask(id int, selected string) label.Task {
	return label.Task{ID: id, Data: map[string]any{"prompt": "2+2?", "answer_a": "4", "answer_b": "5"},
		Annotations: []label.Annotation{{Result: []label.Result{{FromName: "preference", ToName: "answer_a", Type: "pairwise", Value: label.Value{Selected: selected}}}}}}
}

func ratedTask(id, stars int, correction string) label.Task {
	res := []label.Result{{FromName: "rating", ToName: "response", Type: "rating", Value: label.Value{Rating: stars}}}
	if correction != "" {
		res = append(res, label.Result{FromName: "correction", ToName: "response", Type: "textarea", Value: label.Value{Lines: []string{correction}}})
	}
	return label.Task{ID: id, Data: map[string]any{"prompt": "Say hi", "response": "hello"}, Annotations: []label.Annotation{{Result: res}}}
}

func written(t *testing.T, r *label.Records) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	return b.String()
}

func TestPreferencePairs(t *testing.T) {
	tasks := []label.Task{pairTask(1, "left"), pairTask(2, "right"), pairTask(3, "tie"), {ID: 4, Data: map[string]any{"prompt": "x"}}}
	sg, err := label.PreferencePairs(tasks, datasets.ShareGPT, label.PairFields{})
	require.NoError(t, err)
	assert.JSONEq(t, `[
	  {"conversations": [{"from": "human", "value": "2+2?"}], "chosen": {"from": "gpt", "value": "4"}, "rejected": {"from": "gpt", "value": "5"}},
	  {"conversations": [{"from": "human", "value": "2+2?"}], "chosen": {"from": "gpt", "value": "5"}, "rejected": {"from": "gpt", "value": "4"}}
	]`, written(t, sg))
	assert.Equal(t, map[int]string{3: `selected "tie", not left or right`, 4: "no accepted annotation"}, sg.Skipped)

	al, err := label.PreferencePairs(tasks[:1], datasets.Alpaca, label.PairFields{System: "be right"})
	require.NoError(t, err)
	assert.JSONEq(t, `[{"instruction": "2+2?", "input": "", "chosen": "4", "rejected": "5", "system": "be right"}]`, written(t, al))

	_, err = label.PreferencePairs(tasks, "csv", label.PairFields{})
	assert.ErrorContains(t, err, `format "csv": must be datasets.Alpaca or datasets.ShareGPT`)
}

func TestSFTAndKTO(t *testing.T) {
	tasks := []label.Task{ratedTask(1, 5, ""), ratedTask(2, 2, "Hi there!"), ratedTask(3, 1, ""), {ID: 4}}
	sft, err := label.SFT(tasks, datasets.Alpaca, label.ResponseFields{})
	require.NoError(t, err)
	assert.JSONEq(t, `[
	  {"instruction": "Say hi", "input": "", "output": "hello"},
	  {"instruction": "Say hi", "input": "", "output": "Hi there!"}
	]`, written(t, sft))
	assert.Equal(t, "rated 1 (below 4) without a correction", sft.Skipped[3])

	sg, err := label.SFT(tasks[:1], datasets.ShareGPT, label.ResponseFields{System: "sys"})
	require.NoError(t, err)
	assert.JSONEq(t, `[{"conversations": [{"from": "human", "value": "Say hi"}, {"from": "gpt", "value": "hello"}], "system": "sys"}]`, written(t, sg))

	kto, err := label.KTO(tasks, datasets.ShareGPT, label.ResponseFields{})
	require.NoError(t, err)
	assert.JSONEq(t, `[
	  {"conversations": [{"from": "human", "value": "Say hi"}, {"from": "gpt", "value": "hello"}], "label": true},
	  {"conversations": [{"from": "human", "value": "Say hi"}, {"from": "gpt", "value": "hello"}], "label": false},
	  {"conversations": [{"from": "human", "value": "Say hi"}, {"from": "gpt", "value": "Hi there!"}], "label": true},
	  {"conversations": [{"from": "human", "value": "Say hi"}, {"from": "gpt", "value": "hello"}], "label": false}
	]`, written(t, kto))

	empty, err := label.SFT(nil, datasets.Alpaca, label.ResponseFields{})
	require.NoError(t, err)
	assert.Equal(t, "[]\n", written(t, empty))
	var nilRecords *label.Records
	assert.Error(t, nilRecords.WriteJSON(&bytes.Buffer{}))
}

// The records carry every column the dataset_info.json entry llm renders
// for them names: what LLaMA-Factory reads is there.
func TestRecordsMatchWhatLLMReads(t *testing.T) {
	pairs, err := label.PreferencePairs([]label.Task{pairTask(1, "left")}, datasets.ShareGPT, label.PairFields{})
	require.NoError(t, err)
	kto, err := label.KTO([]label.Task{ratedTask(1, 5, "")}, datasets.Alpaca, label.ResponseFields{})
	require.NoError(t, err)
	sft, err := label.SFT([]label.Task{ratedTask(1, 5, "")}, datasets.ShareGPT, label.ResponseFields{})
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		records *label.Records
		tune    *llm.FineTune
		want    []string // keys LLaMA-Factory reads by default (Alpaca)
	}{
		"dpo-sharegpt": {pairs, llm.DPO("dpo", "Qwen/Qwen2.5-7B-Instruct"), nil},
		"kto-alpaca":   {kto, llm.KTO("kto", "Qwen/Qwen2.5-7B-Instruct"), []string{"instruction", "input", "output"}},
		"sft-sharegpt": {sft, llm.SFT("sft", "Qwen/Qwen2.5-7B-Instruct"), nil},
	} {
		t.Run(name, func(t *testing.T) {
			tc.tune.AddDataset(tc.records.Dataset("labels", "pvc://datasets/labels.json")).Output("pvc://models/out")
			objs, err := tc.tune.Objects()
			require.NoError(t, err)
			var info map[string]struct {
				Formatting string            `json:"formatting"`
				Columns    map[string]string `json:"columns"`
			}
			require.NoError(t, json.Unmarshal([]byte(objs[0].(*corev1.ConfigMap).Data[llm.DatasetsKey]), &info))
			var records []map[string]any
			require.NoError(t, json.Unmarshal([]byte(written(t, tc.records)), &records))
			require.NotEmpty(t, records)
			assert.Equal(t, string(tc.records.Format), info["labels"].Formatting)
			for _, column := range info["labels"].Columns {
				assert.Contains(t, records[0], column)
			}
			for _, key := range tc.want {
				assert.Contains(t, records[0], key)
			}
		})
	}
}
