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

// Command chart draws bench results (results.json of bench/loopback) as a PNG:
// steady memory and cold start (start to first Foo reconciled) against N,
// one line per controller.
//
//	go run . results.json chart.png
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
	"sort"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

type result struct {
	Controller   string
	N            int
	SteadyRSSMiB float64
	FirstFooMs   float64
}

type report struct {
	Ns      []int
	Results []result
}

var palette = []color.RGBA{{0x1f, 0x77, 0xb4, 255}, {0xd6, 0x27, 0x28, 255}, {0x2c, 0xa0, 0x2c, 255}, {0x94, 0x67, 0xbd, 255}, {0xff, 0x7f, 0x0e, 255}}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: chart results.json chart.png")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	check(err)
	var rep report
	check(json.Unmarshal(b, &rep))
	sort.Ints(rep.Ns)

	img := image.NewRGBA(image.Rect(0, 0, 1100, 520))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	panel(img, image.Rect(60, 40, 520, 400), "steady RSS (MiB) vs N", rep, func(r result) float64 { return r.SteadyRSSMiB }, true)
	panel(img, image.Rect(600, 40, 1060, 400), "start -> first Foo reconciled (ms) vs N", rep, func(r result) float64 { return r.FirstFooMs }, false)
	f, err := os.Create(os.Args[2])
	check(err)
	check(png.Encode(f, img))
	check(f.Close())
}

func panel(img *image.RGBA, r image.Rectangle, title string, rep report, value func(result) float64, adapters bool) {
	text(img, r.Min.X, r.Min.Y-15, title, color.Black)
	series := map[string]map[int]float64{}
	var names []string
	maxV := 0.0
	for _, res := range rep.Results {
		if res.Controller == "ApiServerSource adapter" && !adapters {
			continue
		}
		if series[res.Controller] == nil {
			series[res.Controller] = map[int]float64{}
			names = append(names, res.Controller)
		}
		v := value(res)
		series[res.Controller][res.N] = v
		maxV = math.Max(maxV, v)
	}
	if maxV == 0 {
		maxV = 1
	}
	maxV *= 1.1
	axis := color.RGBA{0x44, 0x44, 0x44, 255}
	line(img, r.Min.X, r.Max.Y, r.Max.X, r.Max.Y, axis)
	line(img, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y, axis)
	for i := 0; i <= 4; i++ {
		v := maxV * float64(i) / 4
		y := r.Max.Y - int(float64(r.Dy())*float64(i)/4)
		text(img, r.Min.X-55, y+4, fmt.Sprintf("%7.0f", v), axis)
		line(img, r.Min.X-3, y, r.Min.X, y, axis)
	}
	x := func(i int) int {
		if len(rep.Ns) == 1 {
			return r.Min.X + r.Dx()/2
		}
		return r.Min.X + 20 + (r.Dx()-40)*i/(len(rep.Ns)-1)
	}
	for i, n := range rep.Ns {
		text(img, x(i)-12, r.Max.Y+18, fmt.Sprintf("N=%d", n), axis)
	}
	for si, name := range names {
		c := palette[si%len(palette)]
		px, py := -1, -1
		for i, n := range rep.Ns {
			v, ok := series[name][n]
			if !ok {
				px = -1
				continue
			}
			cx, cy := x(i), r.Max.Y-int(float64(r.Dy())*v/maxV)
			dot(img, cx, cy, c)
			if px >= 0 {
				line(img, px, py, cx, cy, c)
			}
			px, py = cx, cy
		}
		ly := r.Max.Y + 36 + 14*si
		dot(img, r.Min.X+5, ly-4, c)
		text(img, r.Min.X+15, ly, name, c)
	}
}

func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func dot(img *image.RGBA, x, y int, c color.Color) {
	for dx := -3; dx <= 3; dx++ {
		for dy := -3; dy <= 3; dy++ {
			img.Set(x+dx, y+dy, c)
		}
	}
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	steps := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= steps; i++ {
		x := x0 + (x1-x0)*i/steps
		y := y0 + (y1-y0)*i/steps
		img.Set(x, y, c)
		img.Set(x, y+1, c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
