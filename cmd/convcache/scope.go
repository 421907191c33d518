package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convcache/convcache/cudnn"
	"github.com/convcache/convcache/internal/cachefile"
)

type deviceJSON struct {
	Ordinal int    `json:"ordinal"`
	Name    string `json:"name"`
	CC      string `json:"compute_capability"`
	SMs     int    `json:"sms"`
	Driver  int    `json:"driver"`
	CuDNN   uint64 `json:"cudnn"`
	Cudart  uint64 `json:"cudart"`
	Scope   string `json:"scope"`
	Hash    string `json:"scope_hash"`
}

type scopeJSON struct {
	Override string       `json:"override,omitempty"` // CONVCACHE_SCOPE
	Devices  []deviceJSON `json:"devices"`
	Error    string       `json:"error,omitempty"`
	Warning  string       `json:"warning,omitempty"`
}

func newScopeCmd(e *env) *cobra.Command {
	var asJSON bool
	var device int
	c := &cobra.Command{
		Use:   "scope [--device N] [--json]",
		Short: "print this machine's fingerprint for each device",
		Long: `Prints this machine's fingerprint (the scope its results are stored under)
for each CUDA device, or why there is none (exit 4). CONVCACHE_SCOPE, when
set, is the scope of every device. --device N prints only device N's scope
string, as the library computes it, for scripts.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if !c.Flags().Changed("device") {
				device = -1
			} else if device < 0 {
				return argErr(c, "--device %d: give a device ordinal, 0 or more", device)
			}
			return runScope(e, device, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().IntVar(&device, "device", 0, "print only device `N`'s scope string, nothing else")
	return c
}

func runScope(e *env, device int, asJSON bool) error {
	if device >= 0 {
		// One device, as the library computes it (CONVCACHE_SCOPE included).
		s, err := cudnn.Scope(device)
		if err != nil {
			return noDevice(err)
		}
		fmt.Fprintln(e.stdout, s)
		return nil
	}
	r := scopeJSON{Devices: []deviceJSON{}}
	override, err := cudnn.ScopeOverride()
	if err != nil {
		return noDevice(err)
	}
	r.Override = override
	devs, partial, err := cudnn.Devices()
	if err != nil && r.Override == "" {
		if asJSON {
			r.Error = noDevice(err).Error()
			writeJSON(e.stdout, r)
		}
		return noDevice(err)
	}
	for _, d := range devs {
		s, err := cudnn.ScopeFor(d)
		if err != nil {
			return noDevice(err)
		}
		r.Devices = append(r.Devices, deviceJSON{
			Ordinal: d.Ordinal, Name: d.Name, CC: fmt.Sprintf("%d.%d", d.Major, d.Minor), SMs: d.SMs,
			Driver: d.Driver, CuDNN: d.CuDNN, Cudart: d.Cudart, Scope: s, Hash: hashText(cachefile.ScopeHash(s)),
		})
	}
	if partial != nil {
		r.Warning = partial.Error()
	}
	if asJSON {
		return writeJSON(e.stdout, r)
	}
	w := e.stdout
	if r.Override != "" {
		fmt.Fprintf(w, "CONVCACHE_SCOPE overrides the fingerprint of every device:\n  scope %s\n", safeText(r.Override))
		if len(devs) == 0 {
			fmt.Fprintf(w, "(no device could be read: %v)\n", err)
		}
	}
	for _, d := range r.Devices {
		fmt.Fprintf(w, "device %d: %s (compute %s, %d SMs), CUDA driver %d, cuDNN %d (for CUDA %d)\n  scope %s\n",
			d.Ordinal, safeText(d.Name), d.CC, d.SMs, d.Driver, d.CuDNN, d.Cudart, safeText(d.Scope))
	}
	if partial != nil {
		fmt.Fprintf(e.stderr, "convcache scope: warning: %v\n", partial)
	}
	return nil
}

// noDevice explains a missing fingerprint and what to do; it exits with
// exitNoDevice.
func noDevice(err error) error {
	return &exitErr{exitNoDevice, fmt.Errorf("no device fingerprint on this machine: %s", deviceReason(err))}
}

// deviceReason is the probe's reason without its prefix, with advice when
// the probe gave none.
func deviceReason(err error) string {
	msg := strings.TrimPrefix(message(err), "not available: ")
	if !strings.Contains(msg, "CONVCACHE_SCOPE") {
		msg += "; set CONVCACHE_SCOPE to name the environment, or point CONVCACHE_CUDA_LIBRARY and CONVCACHE_CUDNN_LIBRARY at the libraries"
	}
	return msg
}
