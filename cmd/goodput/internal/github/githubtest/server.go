// Package githubtest is an in-memory GitHub REST API for tests: the issue
// comment endpoints (list with Link-header pagination, create, edit by the
// author only) and GET /user, mounted
// under a path prefix, with token checking, a request log and injectable
// faults (rate limits, server errors). It listens on 127.0.0.1 only.
package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Comment is one stored issue comment.
type Comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	URL  string `json:"html_url"`
	User User   `json:"user"`
}

// User is a comment's author, or the token's account.
type User struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"` // User or Bot
}

// Fault is a canned response served instead of the real one.
type Fault struct {
	Status int
	Header map[string]string
	Body   string // JSON; default {"message": http.StatusText(Status)}
}

// Request is one logged request.
type Request struct {
	Method, Path, Query, Authorization string
	Body                               string
}

// Server is the fake API. Create it with New and Close it when done.
type Server struct {
	srv    *httptest.Server
	prefix string
	token  string

	// PerPage caps the page size of comment lists, so a few comments
	// already span several pages.
	PerPage int
	// Installation makes the token behave like an Actions GITHUB_TOKEN:
	// GET /user is refused (403) and comments are written by
	// github-actions[bot]. Otherwise the token is the user Token().
	Installation bool

	mu       sync.Mutex
	comments map[string][]*Comment // by "owner/repo/number"
	nextID   int64
	faults   []Fault
	log      []Request
}

// New starts a fake API under prefix (e.g. "/api/v3") that accepts only
// "Authorization: Bearer token".
func New(prefix, token string) *Server {
	s := &Server{prefix: "/" + strings.Trim(prefix, "/"), token: token, PerPage: 100,
		comments: map[string][]*Comment{}, nextID: 1000}
	if s.prefix == "/" {
		s.prefix = ""
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the API root to configure clients with (server URL + prefix).
func (s *Server) URL() string { return s.srv.URL + s.prefix }

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// FailNext queues faults; each is served to one upcoming request, in order.
func (s *Server) FailNext(f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f...)
}

// Someone is the author of comments that Seed stores.
var Someone = User{Login: "someone", ID: 501, Type: "User"}

// TokenUser is the account the token belongs to (when not Installation).
var TokenUser = User{Login: "release-bot", ID: 777, Type: "User"}

// ActionsBot is the account an installation token writes as.
var ActionsBot = User{Login: "github-actions[bot]", ID: 41898282, Type: "Bot"}

// Seed stores comments on owner/repo#number as if others had written them.
func (s *Server) Seed(owner, repo string, number int, bodies ...string) {
	s.SeedAs(Someone, owner, repo, number, bodies...)
}

// SeedAs stores comments on owner/repo#number written by u.
func (s *Server) SeedAs(u User, owner, repo string, number int, bodies ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range bodies {
		s.add(owner+"/"+repo+"/"+strconv.Itoa(number), b, u)
	}
}

// tokenUser is who comments created through the API are written by.
func (s *Server) tokenUser() User {
	if s.Installation {
		return ActionsBot
	}
	return TokenUser
}

// Comments returns copies of the comments on owner/repo#number, oldest first.
func (s *Server) Comments(owner, repo string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.comments[owner+"/"+repo+"/"+strconv.Itoa(number)] {
		out = append(out, *c)
	}
	return out
}

// Requests returns the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

func (s *Server) add(key, body string, u User) *Comment {
	s.nextID++
	c := &Comment{ID: s.nextID, Body: body, URL: fmt.Sprintf("https://github.example/%s#issuecomment-%d", key, s.nextID)}
	c.User = u
	s.comments[key] = append(s.comments[key], c)
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Body *string `json:"body"`
	}
	var raw strings.Builder
	if r.Body != nil {
		dec := json.NewDecoder(r.Body)
		_ = dec.Decode(&body)
		if body.Body != nil {
			raw.WriteString(*body.Body)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Authorization: r.Header.Get("Authorization"), Body: raw.String()})
	if len(s.faults) > 0 {
		f := s.faults[0]
		s.faults = s.faults[1:]
		for k, v := range f.Header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(f.Status)
		if f.Body == "" {
			f.Body = fmt.Sprintf(`{"message": %q}`, http.StatusText(f.Status))
		}
		fmt.Fprint(w, f.Body)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, s.prefix+"/")
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found (outside " + s.prefix + ")"})
		return
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// repos/{o}/{r}/issues/{n}/comments and repos/{o}/{r}/issues/comments/{id}
	switch {
	case len(parts) == 1 && parts[0] == "user" && r.Method == http.MethodGet:
		if s.Installation {
			writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
			return
		}
		writeJSON(w, http.StatusOK, s.tokenUser())
	case len(parts) == 6 && parts[0] == "repos" && parts[3] == "issues" && parts[5] == "comments":
		key := parts[1] + "/" + parts[2] + "/" + parts[4]
		switch r.Method {
		case http.MethodGet:
			s.list(w, r, key)
		case http.MethodPost:
			if body.Body == nil {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "body is missing"})
				return
			}
			if n := len([]rune(*body.Body)); n > 65536 {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Body is too long (maximum is 65536 characters)"})
				return
			}
			writeJSON(w, http.StatusCreated, s.add(key, *body.Body, s.tokenUser()))
		default:
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": "method not allowed"})
		}
	case len(parts) == 6 && parts[0] == "repos" && parts[3] == "issues" && parts[4] == "comments" && r.Method == http.MethodPatch:
		id, err := strconv.ParseInt(parts[5], 10, 64)
		if err != nil || body.Body == nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "bad request"})
			return
		}
		for _, cs := range s.comments {
			for _, c := range cs {
				if c.ID == id && strings.HasPrefix(c.URL, "https://github.example/"+parts[1]+"/"+parts[2]+"/") {
					if c.User != s.tokenUser() {
						writeJSON(w, http.StatusForbidden, map[string]string{"message": "Must have admin rights to Repository."})
						return
					}
					c.Body = *body.Body
					writeJSON(w, http.StatusOK, c)
					return
				}
			}
		}
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, key string) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 || per > s.PerPage {
		per = min(30, s.PerPage)
		if q.Get("per_page") != "" {
			per = s.PerPage
		}
	}
	page, _ := strconv.Atoi(q.Get("page"))
	if page < 1 {
		page = 1
	}
	all := s.comments[key]
	sort.SliceStable(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	last := max(1, (len(all)+per-1)/per)
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	link := func(p int, rel string) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		qq := u.Query()
		qq.Set("page", strconv.Itoa(p))
		qq.Set("per_page", strconv.Itoa(per))
		u.RawQuery = qq.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	w.Header().Set("X-RateLimit-Limit", "5000")
	w.Header().Set("X-RateLimit-Remaining", "4999")
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Unix(1<<31-1, 0).Unix(), 10))
	writeJSON(w, http.StatusOK, all[lo:hi])
}
