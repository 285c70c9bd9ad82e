package ops

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// PriceTable is the price of one device-hour per accelerator (a hardware
// profile name, or a resource name for devices no profile matched).
type PriceTable map[string]float64

// Line is one accelerator on a statement.
type Line struct {
	Accelerator string
	DeviceHours float64
	// Price per device-hour and Amount = DeviceHours × Price.
	Price, Amount float64
}

// Statement is the charges of one tenant over a usage report's range.
type Statement struct {
	Tenant   string
	Currency string
	From, To time.Time
	Lines    []Line
	Total    float64
}

// NewStatement prices the tenant's usage: one line per accelerator, sorted
// by name. Every accelerator the tenant used needs a price; the missing ones
// are named together in the error.
func NewStatement(u *Usage, tenant string, prices PriceTable, currency string) (*Statement, error) {
	var errs []error
	if u == nil {
		errs = append(errs, errors.New("usage: must not be nil"))
	}
	if tenant == "" {
		errs = append(errs, errors.New("tenant: must not be empty"))
	}
	for acc, p := range prices {
		if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
			errs = append(errs, fmt.Errorf("prices[%q]: %v must be a finite, non-negative number", acc, p))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("statement: %w", err)
	}
	st := &Statement{Tenant: tenant, Currency: currency, From: u.From, To: u.To}
	totals := u.Totals(tenant)
	for _, acc := range slices.Sorted(maps.Keys(totals)) {
		price, ok := prices[acc]
		if !ok {
			errs = append(errs, fmt.Errorf("prices[%q]: no price for an accelerator %s used", acc, tenant))
			continue
		}
		l := Line{Accelerator: acc, DeviceHours: totals[acc], Price: price, Amount: totals[acc] * price}
		st.Lines = append(st.Lines, l)
		st.Total += l.Amount
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("statement: %w", err)
	}
	return st, nil
}

// WriteTable writes the statement as a person reads a bill. A nil
// statement or w is an error.
func (s *Statement) WriteTable(w io.Writer) error {
	if s == nil {
		return errors.New("write statement: statement is nil")
	}
	if w == nil {
		return errors.New("write statement: w: must not be nil")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "statement for %s, %s to %s\n", s.Tenant, s.From.UTC().Format(time.RFC3339), s.To.UTC().Format(time.RFC3339))
	fmt.Fprintln(tw, "ACCELERATOR\tDEVICE-HOURS\tPRICE\tAMOUNT\t")
	for _, l := range s.Lines {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t\n", l.Accelerator, l.DeviceHours, l.Price, l.Amount)
	}
	fmt.Fprintf(tw, "total\t\t%s\t%.2f\t\n", s.Currency, s.Total)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write statement: %w", err)
	}
	return nil
}
