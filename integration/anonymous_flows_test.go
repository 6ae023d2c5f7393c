//lint:file-ignore SA1019 sampling, elicitation and roots are deprecated from 2026-07-28 (SEP-2577) but still served in 2025-11-25, which these flows exercise.

package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgotypes "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/middleware"
)

// Issue #21 item 3: behind an all-public policy, the server-to-client
// flows of an anonymous session complete: the client's JSON-RPC
// responses (to sampling/createMessage, elicitation/create, roots/list)
// carry no method and no token, and pass because the session is the
// anonymous principal's. Each SDK's own client against its own server,
// with no adapter.

// allPublic makes initialize, the notifications, ping, tools/list and
// the three tools public.
func allPublic(c *mcpguard.Config) {
	c.Operations.Public = middleware.PublicOperations{
		Methods: []string{"initialize", "notifications/initialized", "ping", "tools/list"},
		Tools:   []string{"sample", "elicit", "roots"},
	}
}

func TestAnonymousServerRequestsGoSDK(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "anon-gosdk", Version: "0"}, nil)
	text := func(s string) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil, nil
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return nil, nil, err
		}
		return text("model=" + res.Model)
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "elicit"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "continue?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
		if err != nil {
			return nil, nil, err
		}
		return text("action=" + res.Action)
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil || len(res.Roots) == 0 {
			return nil, nil, err
		}
		return text("root=" + res.Roots[0].URI)
	})
	s := newBindServer(t, func(_ *testing.T, g *mcpguard.Guard, mux *http.ServeMux) {
		g.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	}, allPublic)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "anon", Version: "0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "hello"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	cl.AddRoots(&mcp.Root{URI: "file:///workspace"})
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: rev20251125})
	if err != nil {
		t.Fatalf("connect without a token: %v", err)
	}
	for tool, want := range map[string]string{"sample": "model=test-model", "elicit": "action=accept", "roots": "root=file:///workspace"} {
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: tool})
		cancel()
		if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, want) {
			t.Errorf("%s: %+v, %v; want %q", tool, res, err, want)
		}
	}
	sid := cs.ID()
	if err := cs.Close(); err != nil { // its DELETE, without a token
		t.Errorf("close: %v", err)
	}
	if a := s.send(t, http.MethodGet, "", sid, ""); a.status != http.StatusUnauthorized {
		t.Errorf("GET of the closed anonymous session: %d, want 401", a.status)
	}
}

type mcpgoHandlers struct{}

func (mcpgoHandlers) CreateMessage(context.Context, mcpgotypes.CreateMessageRequest) (*mcpgotypes.CreateMessageResult, error) {
	return &mcpgotypes.CreateMessageResult{Model: "test-model",
		SamplingMessage: mcpgotypes.SamplingMessage{Role: mcpgotypes.RoleAssistant, Content: mcpgotypes.NewTextContent("hello")}}, nil
}

func (mcpgoHandlers) Elicit(context.Context, mcpgotypes.ElicitationRequest) (*mcpgotypes.ElicitationResult, error) {
	return &mcpgotypes.ElicitationResult{ElicitationResponse: mcpgotypes.ElicitationResponse{Action: mcpgotypes.ElicitationResponseActionAccept,
		Content: map[string]any{"ok": true}}}, nil
}

func (mcpgoHandlers) ListRoots(context.Context, mcpgotypes.ListRootsRequest) (*mcpgotypes.ListRootsResult, error) {
	return &mcpgotypes.ListRootsResult{Roots: []mcpgotypes.Root{{URI: "file:///workspace", Name: "w"}}}, nil
}

func TestAnonymousServerRequestsMCPGo(t *testing.T) {
	t.Parallel()
	ms := mcpgoserver.NewMCPServer("anon-mcpgo", "0", mcpgoserver.WithElicitation(), mcpgoserver.WithRoots())
	ms.EnableSampling()
	ms.AddTool(mcpgotypes.NewTool("sample"), func(ctx context.Context, _ mcpgotypes.CallToolRequest) (*mcpgotypes.CallToolResult, error) {
		req := mcpgotypes.CreateMessageRequest{}
		req.Messages = []mcpgotypes.SamplingMessage{{Role: mcpgotypes.RoleUser, Content: mcpgotypes.NewTextContent("hi")}}
		req.MaxTokens = 5
		res, err := ms.RequestSampling(ctx, req)
		if err != nil {
			return nil, err
		}
		return mcpgotypes.NewToolResultText("model=" + res.Model), nil
	})
	ms.AddTool(mcpgotypes.NewTool("elicit"), func(ctx context.Context, _ mcpgotypes.CallToolRequest) (*mcpgotypes.CallToolResult, error) {
		req := mcpgotypes.ElicitationRequest{}
		req.Params.Message = "continue?"
		req.Params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}
		res, err := ms.RequestElicitation(ctx, req)
		if err != nil {
			return nil, err
		}
		return mcpgotypes.NewToolResultText("action=" + string(res.Action)), nil
	})
	ms.AddTool(mcpgotypes.NewTool("roots"), func(ctx context.Context, _ mcpgotypes.CallToolRequest) (*mcpgotypes.CallToolResult, error) {
		res, err := ms.RequestRoots(ctx, mcpgotypes.ListRootsRequest{})
		if err != nil || len(res.Roots) == 0 {
			return nil, err
		}
		return mcpgotypes.NewToolResultText("root=" + res.Roots[0].URI), nil
	})
	s := newBindServer(t, func(_ *testing.T, g *mcpguard.Guard, mux *http.ServeMux) {
		g.Mount(mux, mcpgoserver.NewStreamableHTTPServer(ms))
	}, allPublic)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// mcp-go's server sends sampling and roots requests on the GET
	// stream, which the client opens with continuous listening.
	tr, err := transport.NewStreamableHTTP(s.url, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	h := mcpgoHandlers{}
	c := mcpgoclient.NewClient(tr, mcpgoclient.WithSamplingHandler(h), mcpgoclient.WithElicitationHandler(h), mcpgoclient.WithRootsHandler(h),
		mcpgoclient.WithProtocolVersion(rev20251125))
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgotypes.InitializeRequest{}
	init.Params.ClientInfo = mcpgotypes.Implementation{Name: "anon", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize without a token: %v", err)
	}
	for tool, want := range map[string]string{"sample": "model=test-model", "elicit": "action=accept", "roots": "root=file:///workspace"} {
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		req := mcpgotypes.CallToolRequest{}
		req.Params.Name = tool
		res, err := c.CallTool(callCtx, req)
		cancel()
		if err != nil || res.IsError || len(res.Content) == 0 {
			t.Errorf("%s: %+v, %v; want %q", tool, res, err, want)
			continue
		}
		if txt, _ := res.Content[0].(mcpgotypes.TextContent); !strings.Contains(txt.Text, want) {
			t.Errorf("%s: %q, want %q", tool, txt.Text, want)
		}
	}
}
