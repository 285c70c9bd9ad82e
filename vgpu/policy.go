package vgpu

// Policy is how Pack chooses devices.
type Policy string

// Policies Pack knows. Every policy respects the same constraints (memory,
// compute, MIG geometry, shares per device); they differ in order and
// choice.
const (
	// WholeDevice gives every demand whole devices, as a cluster without
	// sharing would.
	WholeDevice Policy = "whole-device"
	// FirstFit takes demands in order and puts each on the first device
	// (node by node) where it fits.
	FirstFit Policy = "first-fit"
	// Binpack is HAMi's binpack: demands in order, the fullest feasible node,
	// then its fullest feasible devices.
	Binpack Policy = "binpack"
	// Spread is HAMi's spread: demands in order, the emptiest node and
	// devices.
	Spread Policy = "spread"
	// Planner is this package's planner: demands largest first per device
	// type, best fit on open devices (least room left after placing, memory
	// and compute together), MIG instances placed where they keep the
	// largest aligned blocks free, then a pass that empties the least-used
	// devices into others. When a simpler policy does better on the
	// demands (see Pack), the planner returns that packing.
	Planner Policy = "planner"
)

// Policies lists every policy, the baselines first.
func Policies() []Policy { return []Policy{WholeDevice, FirstFit, Binpack, Spread, Planner} }

// DefaultMaxShares is how many slices one device holds at most: HAMi's
// default deviceSplitCount.
const DefaultMaxShares = 10

// PackOption tunes Pack. MaxShares is the one there is.
type PackOption interface{ applyPack(*packConfig) }

type packConfig struct{ maxShares int }

// MaxShares is how many slices (HAMi/Volcano) one device takes at most;
// below 1 means no limit.
type MaxShares int

func (n MaxShares) applyPack(c *packConfig) { c.maxShares = int(n) }
