package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpstdio/mcpstdio/wire"
)

// ProtocolVersion returns the protocol version the session speaks: the one
// the server chose in initialize, or the modern one negotiated or pinned
// (WithProtocolVersion); "" if none was (WithoutHandshake). A
// version of 2026-07-28 or later is the modern era, in which every request
// carries the _meta fields; see Start for how it is negotiated.
func (s *Session) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// handshake negotiates the protocol era, bounded by ctx and the session
// timeout.
//
// With WithProtocolVersion(v): a modern v (2026-07-28 or later) is used
// without any exchange; an older v is offered in initialize. Otherwise it
// follows the 2026-07-28 stdio backward-compatibility rule: it probes
// server/discover with the modern _meta; a result, or an
// UnsupportedProtocolVersionError that lists a modern version it knows, means
// the modern era; any other error, or no answer within the probe timeout
// (WithProbeTimeout), means legacy: initialize offering 2025-11-25,
// accepting the version the server answers, then
// notifications/initialized. A probe or initialize given up on when the
// handshake's bound ends is cancelled (notifications/cancelled). The probe
// and its outcome are noted in the transcript.
func (s *Session) handshake(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if v := s.cfg.version; v != "" {
		if wire.IsModern(v) {
			s.setEra(v, true)
			s.logf("protocol %s pinned: no handshake", v)
			return nil
		}
		return s.initialize(ctx, v)
	}
	pctx, pcancel := context.WithTimeout(ctx, s.cfg.probeTimeout)
	defer pcancel()
	p := s.send(pctx, wire.MethodDiscover, nil, true)
	var resp *Response
	var err error
	select {
	case <-p.done:
		resp, err = p.resp, p.err
	case <-pctx.Done():
		if ctx.Err() != nil {
			// Giving up on the handshake cancels the probe, as any request.
			_ = p.Cancel("mcptest: handshake timeout")
			return s.waitError("waiting for the answer to the server/discover probe", ctx.Err())
		}
		// A late answer will be counted as late, not as an unknown id.
		p.cancelled.Store(true)
		s.logf("probe: no answer to server/discover within %v: legacy server", s.cfg.probeTimeout)
		return s.initialize(ctx, wire.Version20251125)
	}
	if err != nil {
		if resp == nil {
			_ = p.Cancel("mcptest: handshake timeout") // no answer: given up
		}
		return fmt.Errorf("mcptest: probing server/discover: %w", err)
	}
	if resp.Error == nil {
		var r struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		_ = json.Unmarshal(resp.Result, &r)
		v := wire.LatestVersion
		if len(r.SupportedVersions) > 0 && !slices.Contains(r.SupportedVersions, wire.LatestVersion) {
			return fmt.Errorf("mcptest: server/discover: server supports %q, none of which this host speaks (%s)", r.SupportedVersions, wire.LatestVersion)
		}
		s.setEra(v, true)
		s.logf("probe: server/discover answered: modern era, protocol %s", v)
		return nil
	}
	if resp.Error.Code == wire.CodeUnsupportedProtocolVersion || resp.Error.Code == -32004 {
		var d struct {
			Supported []string `json:"supported"`
		}
		if json.Unmarshal(resp.Error.Data, &d) == nil && len(d.Supported) > 0 {
			if slices.Contains(d.Supported, wire.LatestVersion) {
				s.setEra(wire.LatestVersion, true)
				s.logf("probe: %v: modern era, protocol %s", resp.Error, wire.LatestVersion)
				return nil
			}
			for _, v := range d.Supported {
				if wire.IsModern(v) {
					return fmt.Errorf("mcptest: server/discover: %v: the server speaks modern versions %q, none of which this host knows", resp.Error, d.Supported)
				}
			}
			// Only legacy versions: the handshake is the way in.
			s.logf("probe: %v: only legacy versions", resp.Error)
			v := wire.Version20251125
			if !slices.Contains(d.Supported, v) {
				v = slices.Max(d.Supported)
			}
			return s.initialize(ctx, v)
		}
	}
	s.logf("probe: %v: legacy server", resp.Error)
	return s.initialize(ctx, wire.Version20251125)
}

func (s *Session) setEra(v string, modern bool) {
	s.mu.Lock()
	s.version, s.modern, s.negotiated = v, modern, true
	s.mu.Unlock()
}

func (s *Session) initialize(ctx context.Context, offer string) error {
	params := map[string]any{
		"protocolVersion": offer,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": s.cfg.clientName, "version": s.cfg.clientVersion},
	}
	p := s.send(ctx, wire.MethodInitialize, params, false)
	resp, err := p.Wait(ctx)
	if err == nil && resp.Error != nil {
		err = resp.Error
	}
	if err != nil && resp == nil {
		// Giving up on initialize cancels it, as any request.
		_ = p.Cancel("mcptest: handshake timeout")
	}
	if err != nil {
		var re *wire.RPCError
		if errors.As(err, &re) {
			return fmt.Errorf("mcptest: the server rejected initialize (offered %s): %w", offer, err)
		}
		return fmt.Errorf("mcptest: initialize: %w", err)
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil || r.ProtocolVersion == "" {
		return fmt.Errorf("mcptest: initialize: result has no protocolVersion: %.200s", resp.Result)
	}
	s.setEra(r.ProtocolVersion, false)
	s.logf("initialize: offered %s, server chose %s", offer, r.ProtocolVersion)
	if err := s.Notify(wire.MethodInitialized, nil); err != nil {
		return fmt.Errorf("mcptest: sending %s: %w", wire.MethodInitialized, err)
	}
	return nil
}
