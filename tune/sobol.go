package tune

// sobolSampler walks a Sobol sequence (Sobol', 1967) with the direction
// numbers of Joe and Kuo ("Constructing Sobol sequences with better
// two-dimensional projections", SIAM J. Sci. Comput. 30, 2008; their
// new-joe-kuo-6.21201 table), in Gray-code order (Antonov and Saleev), and
// randomised by a digital shift drawn from the seed: each coordinate is
// XORed with a seeded 32-bit word, which keeps every (t,m,s)-net property
// of the sequence. Trial i takes point i, whatever the history.
type sobolSampler struct {
	l         *Local
	direction [][sobolBits]uint32 // per dimension, V_1..V_32
	shift     []uint32
}

const sobolBits = 32

// joeKuo holds, for dimensions 2 to 32, s (the degree of the primitive
// polynomial), a (its inner coefficients as bits) and the initial m_1..m_s,
// from new-joe-kuo-6.21201.
var joeKuo = []struct {
	s, a uint32
	m    []uint32
}{
	{1, 0, []uint32{1}},
	{2, 1, []uint32{1, 3}},
	{3, 1, []uint32{1, 3, 1}},
	{3, 2, []uint32{1, 1, 1}},
	{4, 1, []uint32{1, 1, 3, 3}},
	{4, 4, []uint32{1, 3, 5, 13}},
	{5, 2, []uint32{1, 1, 5, 5, 17}},
	{5, 4, []uint32{1, 1, 5, 5, 5}},
	{5, 7, []uint32{1, 1, 7, 11, 19}},
	{5, 11, []uint32{1, 1, 5, 1, 1}},
	{5, 13, []uint32{1, 1, 1, 3, 11}},
	{5, 14, []uint32{1, 3, 5, 5, 31}},
	{6, 1, []uint32{1, 3, 3, 9, 7, 49}},
	{6, 13, []uint32{1, 1, 1, 15, 21, 21}},
	{6, 16, []uint32{1, 3, 1, 13, 27, 49}},
	{6, 19, []uint32{1, 1, 1, 15, 7, 5}},
	{6, 22, []uint32{1, 3, 1, 15, 13, 25}},
	{6, 25, []uint32{1, 1, 5, 5, 19, 61}},
	{7, 1, []uint32{1, 3, 7, 11, 23, 15, 103}},
	{7, 4, []uint32{1, 3, 7, 13, 13, 15, 69}},
	{7, 7, []uint32{1, 1, 3, 13, 7, 35, 63}},
	{7, 8, []uint32{1, 3, 5, 9, 1, 25, 53}},
	{7, 14, []uint32{1, 3, 1, 13, 9, 35, 107}},
	{7, 19, []uint32{1, 3, 1, 5, 27, 61, 31}},
	{7, 21, []uint32{1, 1, 5, 11, 19, 41, 61}},
	{7, 28, []uint32{1, 3, 5, 3, 3, 13, 69}},
	{7, 31, []uint32{1, 1, 7, 13, 1, 19, 1}},
	{7, 32, []uint32{1, 3, 7, 5, 13, 19, 59}},
	{7, 37, []uint32{1, 1, 3, 9, 25, 29, 41}},
	{7, 41, []uint32{1, 3, 5, 13, 23, 1, 55}},
	{7, 42, []uint32{1, 3, 7, 3, 13, 59, 17}},
}

func newSobolSampler(l *Local) *sobolSampler {
	n := len(l.params)
	s := &sobolSampler{l: l, direction: make([][sobolBits]uint32, n), shift: make([]uint32, n)}
	for d := range n {
		v := &s.direction[d]
		if d == 0 {
			for k := range sobolBits {
				v[k] = 1 << (sobolBits - 1 - k)
			}
			continue
		}
		jk := joeKuo[d-1]
		for k := 0; k < sobolBits; k++ {
			if uint32(k) < jk.s {
				v[k] = jk.m[k] << (sobolBits - 1 - k)
				continue
			}
			// V_k = V_{k-s} ^ (V_{k-s} >> s) ^ sum_j a_j V_{k-j}.
			x := v[k-int(jk.s)] ^ (v[k-int(jk.s)] >> jk.s)
			for j := uint32(1); j < jk.s; j++ {
				if (jk.a>>(jk.s-1-j))&1 == 1 {
					x ^= v[k-int(j)]
				}
			}
			v[k] = x
		}
	}
	rng := l.rngFor(0, 2)
	for d := range s.shift {
		s.shift[d] = rng.Uint32()
	}
	return s
}

// point is the i-th point of the shifted sequence in [0, 1)^n.
func (s *sobolSampler) point(i int) []float64 {
	gray := uint32(i) ^ uint32(i)>>1
	u := make([]float64, len(s.direction))
	for d := range s.direction {
		x := s.shift[d]
		for k := 0; k < sobolBits; k++ {
			if gray>>k&1 == 1 {
				x ^= s.direction[d][k]
			}
		}
		u[d] = float64(x) / (1 << sobolBits)
	}
	return u
}

func (s *sobolSampler) sample(i int, _ []TrialResult, _ []map[string]any) map[string]any {
	return fromUnit(s.l.params, s.point(i))
}
