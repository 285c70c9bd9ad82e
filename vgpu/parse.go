package vgpu

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cubestudio/cube/hardware"
)

// ParseMIGProfile parses a MIG profile name such as "3g.40gb" or
// "1g.10gb+me" into compute slices, memory in GB and the media-extension
// flag. Case and surrounding space are ignored, as the catalogue's
// look-ups ignore them.
func ParseMIGProfile(name string) (computeSlices, memoryGB int, mediaExtension bool, err error) {
	name = canonical(name)
	rest, me := strings.CutSuffix(name, "+me")
	g, gb, ok := strings.Cut(rest, "g.")
	if !ok {
		return 0, 0, false, fmt.Errorf("mig profile %q: want <n>g.<m>gb", name)
	}
	gb, ok = strings.CutSuffix(gb, "gb")
	if !ok {
		return 0, 0, false, fmt.Errorf("mig profile %q: want <n>g.<m>gb", name)
	}
	c, err := smallInt(g)
	if err != nil || c < 1 || c > hardware.MIGComputeSlices {
		return 0, 0, false, fmt.Errorf("mig profile %q: compute slices must be 1 to %d", name, hardware.MIGComputeSlices)
	}
	m, err := smallInt(gb)
	if err != nil || m < 1 {
		return 0, 0, false, fmt.Errorf("mig profile %q: memory must be a positive number of GB", name)
	}
	return c, m, me, nil
}

// ParseTemplate parses an Ascend vNPU template name: vir<AI cores>, then
// optional _<AI CPUs>c, _<GB>g and a media suffix (_m/_dvpp with media
// engines, _nm/_ndvpp without). Memory is left zero; the chip's table
// knows it. Case and surrounding space are ignored; Name is the drivers'
// spelling.
func ParseTemplate(given string) (hardware.VNPUTemplate, error) {
	bad := func(why string) (hardware.VNPUTemplate, error) {
		return hardware.VNPUTemplate{}, fmt.Errorf("vnpu template %q: %s", given, why)
	}
	name := canonical(given)
	rest, ok := strings.CutPrefix(name, "vir")
	if !ok {
		return bad("want vir<cores>[_<n>c][_<n>g][_m|_nm]")
	}
	parts := strings.Split(rest, "_")
	cores, err := smallInt(parts[0])
	if err != nil || cores < 1 {
		return bad("AI cores must be a positive number")
	}
	t := hardware.VNPUTemplate{Name: name, AICores: cores}
	stage := 0 // 1 after cpus, 2 after memory, 3 after media
	for _, part := range parts[1:] {
		switch {
		case stage < 1 && strings.HasSuffix(part, "c"):
			n, err := smallInt(strings.TrimSuffix(part, "c"))
			if err != nil || n < 1 {
				return bad("AI CPUs must be a positive number")
			}
			t.AICPUs, stage = n, 1
		case stage < 2 && strings.HasSuffix(part, "g"):
			n, err := smallInt(strings.TrimSuffix(part, "g"))
			if err != nil || n < 1 {
				return bad("memory must be a positive number of GB")
			}
			t.MemoryMiB, stage = int64(n)*1024, 2
		case stage < 3 && (part == "m" || part == "dvpp"):
			t.Media, stage = "dvpp", 3
		case stage < 3 && (part == "nm" || part == "ndvpp"):
			t.Media, stage = "ndvpp", 3
		default:
			return bad(fmt.Sprintf("unexpected part %q", part))
		}
	}
	return t, nil
}

// canonical is a slice name as the drivers spell it (lower case, no
// surrounding space): the parsers read names as the catalogue's look-ups
// do (hardware.Profile.MIGProfile, VNPUTemplate), which ignore case and
// surrounding space, so that a name one accepts the other parses.
func canonical(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// smallInt parses a short run of decimal digits.
func smallInt(s string) (int, error) {
	if s == "" || len(s) > 4 {
		return 0, fmt.Errorf("not a small number: %q", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("not a number: %q", s)
		}
	}
	return strconv.Atoi(s)
}
