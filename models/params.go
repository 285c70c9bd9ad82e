package models

import (
	"errors"
	"math"
	"math/bits"
)

// errOverflow reports architectures whose parameter count does not fit an
// int64; only nonsense configs get there.
var errOverflow = errors.New("parameter count overflows int64")

// counter adds products of dimensions and remembers whether any step
// overflowed, so the formula below reads like the formula in doc.go.
type counter struct {
	n        int64
	overflow bool
}

func (c *counter) mul(xs ...int) int64 {
	p := uint64(1)
	for _, x := range xs {
		if x < 0 {
			c.overflow = true
			return 0
		}
		hi, lo := bits.Mul64(p, uint64(x))
		if hi != 0 || lo > math.MaxInt64 {
			c.overflow = true
			return 0
		}
		p = lo
	}
	return int64(p)
}

func (c *counter) add(v int64) {
	if v > math.MaxInt64-c.n {
		c.overflow = true
		return
	}
	c.n += v
}

// times multiplies the running total by k (a layer count).
func (c *counter) times(k int) int64 {
	if k < 0 {
		c.overflow = true
		return 0
	}
	hi, lo := bits.Mul64(uint64(c.n), uint64(k))
	if hi != 0 || lo > math.MaxInt64 {
		c.overflow = true
		return 0
	}
	return int64(lo)
}

// countParameters returns the total and active parameter counts of a
// decoder-only transformer described by m, following the formula in doc.go.
// extraPerLayer adds biases the Model fields do not describe (Llama's
// o_proj and MLP biases).
func countParameters(m Model, extraPerLayer int64) (total, active int64, err error) {
	if m.IsEncoder() {
		n, err := encoderParameters(m)
		return n, n, err
	}
	total, active, err = decoderParameters(m, extraPerLayer)
	if err != nil || !m.HasVision() {
		return total, active, err
	}
	vision, err := visionParameters(m.Vision)
	if err != nil {
		return 0, 0, err
	}
	var t, a counter
	t.add(total)
	t.add(vision)
	a.add(active)
	a.add(vision)
	if t.overflow || a.overflow {
		return 0, 0, errOverflow
	}
	return t.n, a.n, nil
}

// encoderParameters counts a BERT-style encoder, following the formula in
// doc.go and the modules of transformers' models/bert/modeling_bert.py and
// models/xlm_roberta/modeling_xlm_roberta.py.
func encoderParameters(m Model) (int64, error) {
	var c counter
	h, i, e := m.HiddenSize, m.IntermediateSize, m.Encoder
	// Word, position and token-type tables, and the embedding LayerNorm
	// (weight and bias).
	c.add(c.mul(m.VocabSize, h))
	c.add(c.mul(e.PositionEmbeddings, h))
	c.add(c.mul(e.TokenTypes, h))
	c.add(c.mul(2, h))

	var layer counter
	layer.add(layer.mul(4, h, h)) // query, key, value, attention output dense
	layer.add(layer.mul(4, h))    // their biases
	layer.add(layer.mul(2, h))    // attention output LayerNorm
	layer.add(layer.mul(2, h, i)) // intermediate and output dense
	layer.add(int64(i) + int64(h))
	layer.add(layer.mul(2, h)) // output LayerNorm
	c.add(layer.times(m.Layers))

	if e.Pooler {
		c.add(c.mul(h, h) + int64(h))
	}
	if e.HeadDense {
		c.add(c.mul(h, h) + int64(h))
	}
	if e.Labels > 0 {
		c.add(c.mul(h, e.Labels) + int64(e.Labels)) // out_proj, or BERT's classifier
	}
	if c.overflow || layer.overflow {
		return 0, errOverflow
	}
	return c.n, nil
}

// visionParameters counts a Qwen2.5-VL vision tower (see Vision and doc.go).
func visionParameters(v Vision) (int64, error) {
	var c counter
	h, i := v.HiddenSize, v.IntermediateSize
	c.add(c.mul(v.InChannels, v.TemporalPatchSize, v.PatchSize, v.PatchSize, h)) // patch_embed.proj, no bias

	var block counter
	block.add(block.mul(2, h))            // norm1, norm2 (RMSNorm)
	block.add(block.mul(3, h, h))         // attn.qkv
	block.add(block.mul(3, h))            // its bias
	block.add(block.mul(h, h))            // attn.proj
	block.add(int64(h))                   // its bias
	block.add(block.mul(3, h, i))         // mlp gate_proj, up_proj, down_proj
	block.add(block.mul(2, i) + int64(h)) // their biases
	c.add(block.times(v.Depth))

	merged := c.mul(h, v.SpatialMergeSize, v.SpatialMergeSize)
	c.add(int64(h))                                 // merger.ln_q
	c.add(c.mul(int(merged), int(merged)) + merged) // merger.mlp.0
	c.add(c.mul(int(merged), v.OutHiddenSize))      // merger.mlp.2
	c.add(int64(v.OutHiddenSize))                   // its bias
	if c.overflow || block.overflow {
		return 0, errOverflow
	}
	return c.n, nil
}

// decoderParameters counts a decoder-only transformer.
func decoderParameters(m Model, extraPerLayer int64) (total, active int64, err error) {
	var c counter
	h := m.HiddenSize

	// Attention block of one layer, with its two RMSNorm weights.
	var attn counter
	if m.UsesMLA() {
		a := m.MLA
		qHead := a.QKNopeHeadDim + a.QKRopeHeadDim
		if a.QLoraRank > 0 {
			attn.add(attn.mul(h, a.QLoraRank))                       // q_a_proj
			attn.add(int64(a.QLoraRank))                             // q_a_layernorm
			attn.add(attn.mul(a.QLoraRank, m.AttentionHeads, qHead)) // q_b_proj
		} else {
			attn.add(attn.mul(h, m.AttentionHeads, qHead)) // q_proj
		}
		attn.add(attn.mul(h, a.KVLoraRank+a.QKRopeHeadDim))                            // kv_a_proj_with_mqa
		attn.add(int64(a.KVLoraRank))                                                  // kv_a_layernorm
		attn.add(attn.mul(a.KVLoraRank, m.AttentionHeads, a.QKNopeHeadDim+a.VHeadDim)) // kv_b_proj
		attn.add(attn.mul(m.AttentionHeads, a.VHeadDim, h))                            // o_proj
	} else {
		q := attn.mul(m.AttentionHeads, m.HeadDim)
		kv := attn.mul(m.KVHeads, m.HeadDim)
		attn.add(attn.mul(h, int(q)))      // q_proj
		attn.add(2 * attn.mul(h, int(kv))) // k_proj, v_proj
		attn.add(attn.mul(int(q), h))      // o_proj
		if m.QKVBias {
			attn.add(q + 2*kv)
		}
		if m.QKNorm {
			attn.add(2 * int64(m.HeadDim)) // q_norm, k_norm
		}
	}
	attn.add(2 * int64(h)) // input and post-attention RMSNorm
	attn.add(extraPerLayer)

	// Feed-forward blocks: gated (SwiGLU) MLPs have three h×i matrices.
	dense := c.mul(3, h, m.IntermediateSize)
	denseLayers, moeLayers := m.Layers, 0
	var moeTotal, moeActive int64
	if m.IsMoE() {
		e := m.MoE
		denseLayers = min(e.DenseLayers, m.Layers)
		moeLayers = m.Layers - denseLayers
		expert := c.mul(3, h, e.ExpertIntermediateSize)
		router := c.mul(h, e.Experts)
		moeTotal = c.mul(int(expert), e.Experts+e.SharedExperts) + router
		moeActive = c.mul(int(expert), e.ExpertsPerToken+e.SharedExperts) + router
	}

	// Embedding, output head (unless tied) and final norm.
	embed := c.mul(m.VocabSize, h)
	var outer counter
	outer.add(embed)
	if !m.TiedEmbeddings {
		outer.add(embed)
	}
	outer.add(int64(h))

	sum := func(ffnMoE int64) int64 {
		var s counter
		s.add(outer.n)
		var layer counter
		layer.add(attn.n)
		layer.add(dense)
		s.add(layer.times(denseLayers))
		var moeLayer counter
		moeLayer.add(attn.n)
		moeLayer.add(ffnMoE)
		s.add(moeLayer.times(moeLayers))
		if s.overflow || layer.overflow || moeLayer.overflow {
			c.overflow = true
		}
		return s.n
	}
	total = sum(moeTotal)
	active = sum(moeActive)
	if c.overflow || attn.overflow || outer.overflow {
		return 0, 0, errOverflow
	}
	return total, active, nil
}
