/*
Copyright The Foo Operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command bars draws the "chart" of a results.json (bench/knative's) as a
// PNG: panels of labelled bars side by side, a title above, a note below.
//
//	go run ./bars results.json chart.png
//
// The chart is {"title", "note", "panels": [{"title", "bars": [{"label",
// "value"}]}]}; "\n" breaks a bar's label.
package main

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// bar is a bar of a panel; "\n" breaks its label.
type bar struct {
	Label string  `json:"label"`
	Value float64 `json:"value"`
}

// panel is a panel of bars, with a title.
type panel struct {
	Title string `json:"title"`
	Bars  []bar  `json:"bars"`
}

// chart is what results.json's "chart" holds.
type chart struct {
	Title  string  `json:"title"`
	Note   string  `json:"note"`
	Panels []panel `json:"panels"`
}

// palette colours the bars, in order.
var palette = []color.RGBA{{0xd6, 0x27, 0x28, 255}, {0x1f, 0x77, 0xb4, 255}, {0x2c, 0xa0, 0x2c, 255}, {0x94, 0x67, 0xbd, 255}, {0xff, 0x7f, 0x0e, 255}}

// Sizes in pixels.
const (
	panelWidth  = 520
	panelHeight = 340
	top         = 60
	left        = 60
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: bars results.json chart.png")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	check(err)
	var in struct {
		Chart chart `json:"chart"`
	}
	check(json.Unmarshal(b, &in))
	c := in.Chart
	if len(c.Panels) == 0 {
		check(fmt.Errorf("%s has no chart", os.Args[1]))
	}
	img := image.NewRGBA(image.Rect(0, 0, left+len(c.Panels)*(panelWidth+left), top+panelHeight+90))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	text(img, left, 20, c.Title, color.Black)
	for i, p := range c.Panels {
		x := left + i*(panelWidth+left)
		drawPanel(img, image.Rect(x, top, x+panelWidth, top+panelHeight), p)
	}
	text(img, left, img.Bounds().Dy()-12, c.Note, color.Black)
	f, err := os.Create(os.Args[2])
	check(err)
	check(png.Encode(f, img))
	check(f.Close())
}

// drawPanel draws a panel's bars in r, on an axis from 0 to its largest
// value, each with its value above it and its label below.
func drawPanel(img *image.RGBA, r image.Rectangle, p panel) {
	axis := color.RGBA{0x44, 0x44, 0x44, 255}
	text(img, r.Min.X, r.Min.Y-15, p.Title, color.Black)
	maxV := 0.0
	for _, b := range p.Bars {
		maxV = math.Max(maxV, b.Value)
	}
	if maxV == 0 {
		maxV = 1
	}
	maxV *= 1.15
	line(img, r.Min.X, r.Max.Y, r.Max.X, r.Max.Y, axis)
	line(img, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y, axis)
	for i := 0; i <= 4; i++ {
		y := r.Max.Y - r.Dy()*i/4
		text(img, r.Min.X-55, y+4, fmt.Sprintf("%7.0f", maxV*float64(i)/4), axis)
		line(img, r.Min.X-3, y, r.Min.X, y, axis)
	}
	slot := r.Dx() / max(len(p.Bars), 1)
	for i, b := range p.Bars {
		c := palette[i%len(palette)]
		x0 := r.Min.X + i*slot + slot/5
		x1 := r.Min.X + (i+1)*slot - slot/5
		y := r.Max.Y - int(float64(r.Dy())*b.Value/maxV)
		draw.Draw(img, image.Rect(x0, y, x1, r.Max.Y), image.NewUniform(c), image.Point{}, draw.Src)
		text(img, x0, y-5, fmt.Sprintf("%.1f", b.Value), axis)
		for j, l := range strings.Split(b.Label, "\n") {
			text(img, r.Min.X+i*slot+4, r.Max.Y+18+14*j, l, c)
		}
	}
}

// text writes s with its baseline's left end at x, y.
func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// line draws a line from x0, y0 to x1, y1.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	steps := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= steps; i++ {
		img.Set(x0+(x1-x0)*i/steps, y0+(y1-y0)*i/steps, c)
	}
}

// abs is v's absolute value.
func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// check stops the program on an error.
func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bars:", err)
		os.Exit(1)
	}
}
