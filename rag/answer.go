package rag

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/rag/internal/lex"
)

// Answer is a reply to a question with the chunks it rests on.
type Answer struct {
	// Text is the answer, with citations as bracketed source numbers: "[1]".
	Text string
	// Sources are the retrieved chunks, numbered from 1 in the prompt.
	Sources []Hit
	// Citations are the sources Text cites, in order of first citation.
	Citations []Citation
	// Extractive says Text was assembled from source sentences because no
	// chat model was configured, rather than written by a model.
	Extractive bool
}

// Citation maps a bracketed number in an answer back to its chunk.
type Citation struct {
	N       int // the number in brackets
	ChunkID string
	Source  string
	Title   string
	Section string
	Page    int
	// Start and End are the chunk's byte offsets in the source.
	Start, End int
}

// SystemPrompt is the instruction the chat model gets; the sources and the
// question follow in the user message.
const SystemPrompt = "You answer questions using only the numbered sources you are given. " +
	"After each statement, cite the sources it comes from in square brackets, like [1] or [2][3]. " +
	"If the sources do not contain the answer, say that you do not know; do not use other knowledge."

// Prompt builds the user message: every source numbered with where it comes
// from, then the question.
func Prompt(question string, sources []Hit) string {
	var b strings.Builder
	b.WriteString("Sources:\n")
	for i, h := range sources {
		fmt.Fprintf(&b, "\n[%d] %s", i+1, h.Chunk.Source)
		if h.Chunk.Section != "" {
			fmt.Fprintf(&b, " — %s", h.Chunk.Section)
		}
		if h.Chunk.Page > 0 {
			fmt.Fprintf(&b, ", page %d", h.Chunk.Page)
		}
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(h.Chunk.Text))
	}
	fmt.Fprintf(&b, "\nQuestion: %s", question)
	return b.String()
}

var citationPattern = regexp.MustCompile(`\[(\d+(?:\s*,\s*\d+)*)\]`)

// citations returns the sources text cites, in order of first citation;
// numbers outside 1..len(sources) are ignored.
func citations(text string, sources []Hit) []Citation {
	var out []Citation
	seen := map[int]bool{}
	for _, m := range citationPattern.FindAllStringSubmatch(text, -1) {
		for _, part := range strings.Split(m[1], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil || n < 1 || n > len(sources) || seen[n] {
				continue
			}
			seen[n] = true
			c := sources[n-1].Chunk
			out = append(out, Citation{N: n, ChunkID: c.ID, Source: c.Source, Title: c.Title,
				Section: c.Section, Page: c.Page, Start: c.Start, End: c.End})
		}
	}
	return out
}

// NoAnswer is the extractive answer when no source sentence shares a word
// with the question.
const NoAnswer = "The knowledge base has no passage that answers this."

// extractive answers with the sentence of each of the first three sources
// that shares most words with the question (a word matches another it
// begins, "drain" matches "draining", when both have three letters or
// more; stop words do not count), each cited. Headings and titles (lines
// without a closing full stop, question or exclamation mark) and
// sentences under four words are passed over, and so is a source's best
// sentence if it shares no more than half as many words as the best of
// all.
func extractive(question string, sources []Hit) string {
	var want []string
	for _, t := range lex.Terms(question) {
		if (len(t) > 2 || unicode.IsDigit(rune(t[0]))) && !lex.Stop(t) {
			want = append(want, t)
		}
	}
	matches := func(w, q string) bool {
		if w == q {
			return true
		}
		if len(w) < 3 || len(q) < 3 {
			return false
		}
		return strings.HasPrefix(w, q) || strings.HasPrefix(q, w)
	}
	type pick struct {
		sentence string
		n, score int
	}
	var picks []pick
	for i, h := range sources {
		best := pick{}
		for _, s := range sentences(h.Chunk.Text) {
			words := lex.Terms(s)
			if len(words) < 4 || strings.HasPrefix(s, "#") || !strings.ContainsAny(s[len(s)-1:], ".?!") {
				continue
			}
			score := 0
			for _, q := range want {
				for _, w := range words {
					if matches(w, q) {
						score++
						break
					}
				}
			}
			if score > best.score {
				best = pick{s, i + 1, score}
			}
		}
		if best.score > 0 {
			picks = append(picks, best)
		}
		if len(picks) == 3 {
			break
		}
	}
	if len(picks) == 0 {
		return NoAnswer
	}
	top := 0
	for _, p := range picks {
		top = max(top, p.score)
	}
	parts := make([]string, 0, len(picks))
	for _, p := range picks {
		if p.score == top || 2*p.score > top {
			parts = append(parts, fmt.Sprintf("%s [%d]", p.sentence, p.n))
		}
	}
	return strings.Join(parts, " ")
}

// sentences cuts text at sentence ends and blank lines; a single line
// break is a space, since prose is wrapped.
func sentences(text string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if s := strings.Join(strings.Fields(text[start:end]), " "); s != "" {
			out = append(out, s)
		}
		start = end
	}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			if i+1 < len(text) && text[i+1] == '\n' {
				flush(i + 1)
			}
		case '.', '?', '!':
			if i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' {
				flush(i + 1)
			}
		}
	}
	flush(len(text))
	return out
}

func (kb *KnowledgeBase) chatMessages(question string, sources []Hit, o queryOptions) []openai.ChatCompletionMessage {
	msgs := []openai.ChatCompletionMessage{inference.SystemMessage(SystemPrompt)}
	msgs = append(msgs, o.history...)
	return append(msgs, inference.UserMessage(Prompt(question, sources)))
}

// Answer retrieves sources for question and answers it: through the chat
// model set with Chat, or extractively (see Answer.Extractive) without one.
// With no sources found it answers NoAnswer without calling the model.
func (kb *KnowledgeBase) Answer(ctx context.Context, question string, opts ...QueryOption) (*Answer, error) {
	return kb.answer(ctx, question, nil, opts)
}

// AnswerStream is Answer with the model's reply streamed: onDelta gets each
// piece of text as it arrives (an error from it stops the stream and is
// returned). The extractive answer arrives as one piece.
func (kb *KnowledgeBase) AnswerStream(ctx context.Context, question string, onDelta func(string) error, opts ...QueryOption) (*Answer, error) {
	if onDelta == nil {
		return nil, errors.New("answer: onDelta: required")
	}
	return kb.answer(ctx, question, onDelta, opts)
}

func (kb *KnowledgeBase) answer(ctx context.Context, question string, onDelta func(string) error, opts []QueryOption) (*Answer, error) {
	if strings.TrimSpace(question) == "" {
		return nil, errors.New("answer: question: required")
	}
	hits, o, err := kb.retrieveWith(ctx, question, opts)
	if err != nil {
		return nil, fmt.Errorf("answer: %w", err)
	}
	a := &Answer{Sources: hits}
	emit := func(s string) error {
		if onDelta != nil {
			return onDelta(s)
		}
		return nil
	}
	switch {
	case len(hits) == 0:
		a.Text, a.Extractive = NoAnswer, kb.chat == nil
		if err := emit(a.Text); err != nil {
			return nil, err
		}
		return a, nil
	case kb.chat == nil:
		a.Text, a.Extractive = extractive(question, hits), true
		if err := emit(a.Text); err != nil {
			return nil, err
		}
	case onDelta == nil:
		resp, err := kb.chat.Chat(ctx, kb.chatMessages(question, hits, o)...)
		if err != nil {
			return nil, fmt.Errorf("answer: %w", err)
		}
		if len(resp.Choices) == 0 {
			return nil, errors.New("answer: the chat model returned no choice")
		}
		a.Text = resp.Choices[0].Message.Content
	default:
		stream, err := kb.chat.ChatStream(ctx, kb.chatMessages(question, hits, o)...)
		if err != nil {
			return nil, fmt.Errorf("answer: %w", err)
		}
		defer stream.Close()
		var b strings.Builder
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("answer: stream: %w", err)
			}
			for _, c := range chunk.Choices {
				if c.Index != 0 || c.Delta.Content == "" {
					continue
				}
				b.WriteString(c.Delta.Content)
				if err := onDelta(c.Delta.Content); err != nil {
					return nil, err
				}
			}
		}
		a.Text = b.String()
	}
	a.Citations = citations(a.Text, hits)
	return a, nil
}
