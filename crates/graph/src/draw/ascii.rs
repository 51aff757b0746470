//! A small layered (Sugiyama-style) layout drawn on a character canvas.

use std::collections::VecDeque;

use super::DrawableGraph;

/// Rows of a box: border, label, border.
const BOX_HEIGHT: usize = 3;
/// Rows between two layers of boxes.
const LAYER_GAP: usize = 3;
/// Ordering sweeps (each down then up).
const ORDER_SWEEPS: usize = 12;
/// Coordinate relaxation sweeps.
const PLACE_SWEEPS: usize = 16;

#[derive(Clone, Copy, PartialEq)]
enum Item {
    Vertex(usize),
    /// The `k`-th bend point of layout edge `e`.
    Dummy(usize, usize),
}

/// An edge of the layout, always pointing down.
struct LayoutEdge {
    upper: usize,
    lower: usize,
    conditional: bool,
}

pub(super) fn draw(graph: &DrawableGraph) -> String {
    let nodes = graph.nodes();
    if nodes.is_empty() {
        return String::new();
    }
    let index = |id: &str| nodes.iter().position(|n| n.id == id);
    let all_edges: Vec<(usize, usize, bool)> = graph
        .edges()
        .iter()
        .filter_map(|e| Some((index(&e.source)?, index(&e.target)?, e.conditional)))
        .collect();
    let keep = component(nodes.len(), &all_edges);
    let vertices: Vec<usize> = (0..nodes.len()).filter(|v| keep[*v]).collect();
    let local = |v: usize| vertices.iter().position(|x| *x == v);
    let edges: Vec<(usize, usize, bool)> = all_edges
        .iter()
        .filter_map(|(s, t, c)| Some((local(*s)?, local(*t)?, *c)))
        .filter(|(s, t, _)| s != t)
        .collect();
    let labels: Vec<String> = vertices
        .iter()
        .map(|v| format!(" {} ", nodes[*v].name))
        .collect();
    let widths: Vec<usize> = labels.iter().map(|l| l.chars().count() + 2).collect();

    let layout_edges = break_cycles(vertices.len(), &edges);
    let ranks = rank(vertices.len(), &layout_edges);
    let (layers, bends) = build_layers(&ranks, &layout_edges);
    let layers = order(layers, &layout_edges, &bends);
    let spacing = widths.iter().copied().min().unwrap_or(1);
    let item_width = |item: &Item| match item {
        Item::Vertex(v) => widths[*v],
        Item::Dummy(..) => 1,
    };
    let centers = place(&layers, &layout_edges, &bends, &item_width, spacing);

    // Integer columns: a box's left border, a bend point's column.
    let mut min_left = f64::INFINITY;
    for (layer, xs) in layers.iter().zip(&centers) {
        for (item, x) in layer.iter().zip(xs) {
            min_left = min_left.min(x - item_width(item) as f64 / 2.0);
        }
    }
    let mut vertex_pos = vec![(0_usize, 0_usize); vertices.len()];
    let mut bend_pos: Vec<Vec<(usize, usize)>> =
        bends.iter().map(|b| vec![(0, 0); b.len()]).collect();
    let mut cols = 1;
    for (r, (layer, xs)) in layers.iter().zip(&centers).enumerate() {
        let top = r * (BOX_HEIGHT + LAYER_GAP);
        for (item, x) in layer.iter().zip(xs) {
            let width = item_width(item);
            let left = (x - width as f64 / 2.0 - min_left).round().max(0.0) as usize;
            cols = cols.max(left + width);
            match item {
                Item::Vertex(v) => vertex_pos[*v] = (left, top),
                Item::Dummy(e, k) => bend_pos[*e][*k] = (left, top),
            }
        }
    }
    let lines = layers.len() * (BOX_HEIGHT + LAYER_GAP) - LAYER_GAP;
    let mut canvas = Canvas::new(cols, lines);
    // Edges first, so that boxes cover their ends.
    for (e, edge) in layout_edges.iter().enumerate() {
        let (ul, ut) = vertex_pos[edge.upper];
        let (ll, lt) = vertex_pos[edge.lower];
        let mut points = vec![(ul + widths[edge.upper] / 2, ut + BOX_HEIGHT - 1)];
        for (col, top) in &bend_pos[e] {
            points.push((*col, *top));
            points.push((*col, top + BOX_HEIGHT - 1));
        }
        points.push((ll + widths[edge.lower] / 2, lt));
        let c = if edge.conditional { '.' } else { '*' };
        for pair in points.windows(2) {
            canvas.line(pair[0], pair[1], c);
        }
    }
    for (v, (left, top)) in vertex_pos.iter().enumerate() {
        canvas.boxed(*left, *top, widths[v], &labels[v]);
    }
    canvas.render()
}

/// Which vertices are connected (in either direction) to the first one.
fn component(n: usize, edges: &[(usize, usize, bool)]) -> Vec<bool> {
    let mut keep = vec![false; n];
    let mut queue = VecDeque::from([0]);
    keep[0] = true;
    while let Some(v) = queue.pop_front() {
        for (s, t, _) in edges {
            for (a, b) in [(*s, *t), (*t, *s)] {
                if a == v && !keep[b] {
                    keep[b] = true;
                    queue.push_back(b);
                }
            }
        }
    }
    keep
}

/// Turns edges that close a cycle upside down (depth-first from the
/// vertices nothing leads to, in order), so every layout edge points down.
fn break_cycles(n: usize, edges: &[(usize, usize, bool)]) -> Vec<LayoutEdge> {
    let has_in: Vec<bool> = (0..n).map(|v| edges.iter().any(|e| e.1 == v)).collect();
    let starts: Vec<usize> = (0..n)
        .filter(|v| !has_in[*v])
        .chain((0..n).filter(|v| has_in[*v]))
        .collect();
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state = vec![0_u8; n];
    let mut reversed = vec![false; edges.len()];
    for start in starts {
        if state[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            match edges.iter().enumerate().skip(*next).find(|(_, e)| e.0 == v) {
                Some((i, e)) => {
                    *next = i + 1;
                    match state[e.1] {
                        0 => {
                            state[e.1] = 1;
                            stack.push((e.1, 0));
                        }
                        1 => reversed[i] = true,
                        _ => {}
                    }
                }
                None => {
                    state[v] = 2;
                    stack.pop();
                }
            }
        }
    }
    edges
        .iter()
        .zip(reversed)
        .map(|(&(s, t, conditional), rev)| LayoutEdge {
            upper: if rev { t } else { s },
            lower: if rev { s } else { t },
            conditional,
        })
        .collect()
}

/// Longest-path layers; a vertex nothing leads to sits just above its
/// highest successor.
fn rank(n: usize, edges: &[LayoutEdge]) -> Vec<usize> {
    let mut indegree: Vec<usize> = (0..n)
        .map(|v| edges.iter().filter(|e| e.lower == v).count())
        .collect();
    let mut ranks = vec![0_usize; n];
    let mut ready: VecDeque<usize> = (0..n).filter(|v| indegree[*v] == 0).collect();
    let mut topo = Vec::with_capacity(n);
    while let Some(v) = ready.pop_front() {
        topo.push(v);
        for e in edges.iter().filter(|e| e.upper == v) {
            ranks[e.lower] = ranks[e.lower].max(ranks[v] + 1);
            indegree[e.lower] -= 1;
            if indegree[e.lower] == 0 {
                ready.push_back(e.lower);
            }
        }
    }
    for v in topo.into_iter().rev() {
        let is_source = !edges.iter().any(|e| e.lower == v);
        let lowest = edges
            .iter()
            .filter(|e| e.upper == v)
            .map(|e| ranks[e.lower])
            .min();
        if let (true, Some(lowest)) = (is_source && v != 0, lowest) {
            ranks[v] = ranks[v].max(lowest.saturating_sub(1));
        }
    }
    ranks
}

/// Layers of vertices, with a bend point on every layer a long edge crosses.
fn build_layers(ranks: &[usize], edges: &[LayoutEdge]) -> (Vec<Vec<Item>>, Vec<Vec<usize>>) {
    let depth = ranks.iter().copied().max().unwrap_or(0) + 1;
    let mut layers: Vec<Vec<Item>> = vec![Vec::new(); depth];
    // Vertices in breadth-first order from the top, for a stable start.
    let mut seen = vec![false; ranks.len()];
    let mut queue: VecDeque<usize> = (0..ranks.len()).filter(|v| ranks[*v] == 0).collect();
    for v in &queue {
        seen[*v] = true;
    }
    let mut visit = Vec::new();
    while let Some(v) = queue.pop_front() {
        visit.push(v);
        for e in edges.iter().filter(|e| e.upper == v) {
            if !seen[e.lower] {
                seen[e.lower] = true;
                queue.push_back(e.lower);
            }
        }
    }
    visit.extend((0..ranks.len()).filter(|v| !seen[*v]));
    for v in visit {
        layers[ranks[v]].push(Item::Vertex(v));
    }
    let mut bends = Vec::with_capacity(edges.len());
    for (i, e) in edges.iter().enumerate() {
        let layers_crossed: Vec<usize> = (ranks[e.upper] + 1..ranks[e.lower]).collect();
        for (k, r) in layers_crossed.iter().enumerate() {
            layers[*r].push(Item::Dummy(i, k));
        }
        bends.push(layers_crossed);
    }
    (layers, bends)
}

/// The item one layer up (`up`) or down joined to `item`.
fn neighbours(item: Item, up: bool, edges: &[LayoutEdge], bends: &[Vec<usize>]) -> Vec<Item> {
    let segment_end = |e: usize, k: Option<usize>, towards_upper: bool| -> Item {
        // `k` is the bend index we are at (None = at the edge's vertex).
        let count = bends[e].len();
        match (k, towards_upper) {
            (None, true) => match count {
                0 => Item::Vertex(edges[e].upper),
                _ => Item::Dummy(e, count - 1),
            },
            (None, false) => match count {
                0 => Item::Vertex(edges[e].lower),
                _ => Item::Dummy(e, 0),
            },
            (Some(0), true) => Item::Vertex(edges[e].upper),
            (Some(k), true) => Item::Dummy(e, k - 1),
            (Some(k), false) if k + 1 == count => Item::Vertex(edges[e].lower),
            (Some(k), false) => Item::Dummy(e, k + 1),
        }
    };
    match item {
        Item::Vertex(v) => edges
            .iter()
            .enumerate()
            .filter(|(_, e)| if up { e.lower == v } else { e.upper == v })
            .map(|(i, _)| segment_end(i, None, up))
            .collect(),
        Item::Dummy(e, k) => vec![segment_end(e, Some(k), up)],
    }
}

fn crossings(layers: &[Vec<Item>], edges: &[LayoutEdge], bends: &[Vec<usize>]) -> usize {
    let mut total = 0;
    for pair in layers.windows(2) {
        let mut segments = Vec::new();
        for (i, item) in pair[0].iter().enumerate() {
            for below in neighbours(*item, false, edges, bends) {
                if let Some(j) = pair[1].iter().position(|x| *x == below) {
                    segments.push((i, j));
                }
            }
        }
        for (a, s) in segments.iter().enumerate() {
            for t in &segments[a + 1..] {
                if (s.0 < t.0 && s.1 > t.1) || (s.0 > t.0 && s.1 < t.1) {
                    total += 1;
                }
            }
        }
    }
    total
}

/// Barycentre ordering within layers, keeping the ordering with the
/// fewest crossings.
fn order(mut layers: Vec<Vec<Item>>, edges: &[LayoutEdge], bends: &[Vec<usize>]) -> Vec<Vec<Item>> {
    let mut best = layers.clone();
    let mut best_crossings = crossings(&layers, edges, bends);
    for _ in 0..ORDER_SWEEPS {
        for down in [true, false] {
            let range: Vec<usize> = if down {
                (1..layers.len()).collect()
            } else {
                (0..layers.len().saturating_sub(1)).rev().collect()
            };
            for r in range {
                let reference = if down { r - 1 } else { r + 1 };
                let mut keyed: Vec<(f64, usize, Item)> = layers[r]
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let positions: Vec<f64> = neighbours(*item, down, edges, bends)
                            .iter()
                            .filter_map(|n| layers[reference].iter().position(|x| x == n))
                            .map(|p| p as f64)
                            .collect();
                        let key = if positions.is_empty() {
                            i as f64
                        } else {
                            positions.iter().sum::<f64>() / positions.len() as f64
                        };
                        (key, i, *item)
                    })
                    .collect();
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                layers[r] = keyed.into_iter().map(|(_, _, item)| item).collect();
            }
            let count = crossings(&layers, edges, bends);
            if count < best_crossings {
                best_crossings = count;
                best = layers.clone();
            }
        }
    }
    best
}

/// Horizontal centres: each item is pulled towards the mean position of
/// its neighbours, keeping `spacing` columns between items of a layer.
fn place(
    layers: &[Vec<Item>],
    edges: &[LayoutEdge],
    bends: &[Vec<usize>],
    width: &dyn Fn(&Item) -> usize,
    spacing: usize,
) -> Vec<Vec<f64>> {
    let gaps: Vec<Vec<f64>> = layers
        .iter()
        .map(|layer| {
            layer
                .windows(2)
                .map(|p| (width(&p[0]) + width(&p[1])) as f64 / 2.0 + spacing as f64)
                .collect()
        })
        .collect();
    let mut xs: Vec<Vec<f64>> = gaps
        .iter()
        .map(|g| {
            let mut x = vec![0.0];
            for gap in g {
                let last = x.last().copied().unwrap_or(0.0);
                x.push(last + gap);
            }
            x
        })
        .collect();
    let position = |xs: &[Vec<f64>], r: usize, item: &Item| -> Option<f64> {
        layers[r].iter().position(|x| x == item).map(|i| xs[r][i])
    };
    let relax = |xs: &mut Vec<Vec<f64>>, r: usize, dirs: &[bool]| {
        let desired: Vec<f64> = layers[r]
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let mut pulls = Vec::new();
                for &up in dirs {
                    let Some(reference) = (if up { r.checked_sub(1) } else { Some(r + 1) }) else {
                        continue;
                    };
                    if reference >= layers.len() {
                        continue;
                    }
                    for n in neighbours(*item, up, edges, bends) {
                        pulls.extend(position(xs, reference, &n));
                    }
                }
                if pulls.is_empty() {
                    xs[r][i]
                } else {
                    pulls.iter().sum::<f64>() / pulls.len() as f64
                }
            })
            .collect();
        xs[r] = isotonic(&desired, &gaps[r]);
    };
    for _ in 0..PLACE_SWEEPS {
        for r in 1..layers.len() {
            relax(&mut xs, r, &[true]);
        }
        for r in (0..layers.len().saturating_sub(1)).rev() {
            relax(&mut xs, r, &[false]);
        }
    }
    for r in 0..layers.len() {
        relax(&mut xs, r, &[true, false]);
    }
    xs
}

/// The positions closest (least squares) to `desired` that keep at least
/// `gaps[i]` between items `i` and `i + 1` (pool-adjacent-violators).
fn isotonic(desired: &[f64], gaps: &[f64]) -> Vec<f64> {
    let mut offsets = vec![0.0; desired.len()];
    for i in 1..desired.len() {
        offsets[i] = offsets[i - 1] + gaps[i - 1];
    }
    // Blocks of (sum, count) of the shifted targets.
    let mut blocks: Vec<(f64, usize)> = Vec::new();
    for (d, o) in desired.iter().zip(&offsets) {
        blocks.push((d - o, 1));
        while blocks.len() >= 2 {
            let (s2, c2) = blocks[blocks.len() - 1];
            let (s1, c1) = blocks[blocks.len() - 2];
            if s1 / c1 as f64 > s2 / c2 as f64 {
                blocks.pop();
                blocks.pop();
                blocks.push((s1 + s2, c1 + c2));
            } else {
                break;
            }
        }
    }
    let mut out = Vec::with_capacity(desired.len());
    for (sum, count) in blocks {
        out.extend(std::iter::repeat_n(sum / count as f64, count));
    }
    out.iter_mut().zip(&offsets).for_each(|(x, o)| *x += o);
    out
}

struct Canvas {
    cells: Vec<Vec<char>>,
}

impl Canvas {
    fn new(cols: usize, lines: usize) -> Self {
        Self {
            cells: vec![vec![' '; cols]; lines],
        }
    }

    fn point(&mut self, x: i64, y: i64, c: char) {
        let (Ok(x), Ok(y)) = (usize::try_from(x), usize::try_from(y)) else {
            return;
        };
        if let Some(cell) = self.cells.get_mut(y).and_then(|row| row.get_mut(x)) {
            *cell = c;
        }
    }

    fn line(&mut self, from: (usize, usize), to: (usize, usize), c: char) {
        let (x0, y0) = (from.0 as i64, from.1 as i64);
        let (x1, y1) = (to.0 as i64, to.1 as i64);
        let steps = (x1 - x0).abs().max((y1 - y0).abs());
        if steps == 0 {
            self.point(x0, y0, c);
            return;
        }
        for i in 0..=steps {
            let x = x0 as f64 + (x1 - x0) as f64 * i as f64 / steps as f64;
            let y = y0 as f64 + (y1 - y0) as f64 * i as f64 / steps as f64;
            self.point(x.round() as i64, y.round() as i64, c);
        }
    }

    fn boxed(&mut self, left: usize, top: usize, width: usize, label: &str) {
        let (l, t, w) = (left as i64, top as i64, width as i64);
        for x in l..l + w {
            let border = if x == l || x == l + w - 1 { '+' } else { '-' };
            self.point(x, t, border);
            self.point(x, t + 2, border);
        }
        self.point(l, t + 1, '|');
        self.point(l + w - 1, t + 1, '|');
        for (i, c) in label.chars().enumerate() {
            self.point(l + 1 + i as i64, t + 1, c);
        }
    }

    fn render(&self) -> String {
        let rows: Vec<String> = self.cells.iter().map(|r| r.iter().collect()).collect();
        rows.join("\n")
    }
}
