// The module grid of a QR Code symbol: function patterns, codeword
// placement, data masking and format/version information.
// Coordinates: x = column (0 at left), y = row (0 at top).

struct QRMatrix: Sendable, Equatable {
    let version: Int
    let size: Int
    /// Module colours, row-major; true = dark.
    private(set) var modules: [Bool]
    /// true for modules of function patterns and reserved format/version areas,
    /// which are neither data nor masked.
    private(set) var isFunction: [Bool]

    /// A grid with all function patterns drawn (ISO/IEC 18004 §6.3) and the
    /// format information area reserved (filled by `drawFormat`).
    init(version: Int) {
        self.version = version
        self.size = QRTables.size(version: version)
        self.modules = Array(repeating: false, count: size * size)
        self.isFunction = Array(repeating: false, count: size * size)
        drawTimingPatterns()
        drawFinderPatterns()
        drawAlignmentPatterns()
        drawFormatBits(0)  // reserve; the real bits are drawn after masking
        drawVersionInformation()
    }

    /// A bare grid of arbitrary colours with no function modules, for
    /// evaluating the penalty rules on hand-made patterns.
    init(size: Int, modules: [Bool]) {
        precondition(modules.count == size * size)
        self.version = 0
        self.size = size
        self.modules = modules
        self.isFunction = Array(repeating: false, count: size * size)
    }

    subscript(x: Int, y: Int) -> Bool {
        guard x >= 0, y >= 0, x < size, y < size else { return false }
        return modules[y * size + x]
    }

    func isFunctionModule(x: Int, y: Int) -> Bool {
        guard x >= 0, y >= 0, x < size, y < size else { return false }
        return isFunction[y * size + x]
    }

    private mutating func setFunction(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    // MARK: Function patterns

    /// ISO/IEC 18004 §6.3.5: row 6 and column 6 alternate dark/light,
    /// starting and ending dark. Drawn first; finders overwrite the ends.
    private mutating func drawTimingPatterns() {
        for i in 0..<size {
            setFunction(i, 6, i % 2 == 0)
            setFunction(6, i, i % 2 == 0)
        }
    }

    /// ISO/IEC 18004 §6.3.3 finder patterns (7×7: dark ring, light ring,
    /// dark 3×3 core) at three corners, each with its one-module light
    /// separator (§6.3.4), i.e. a 9×9 area clipped to the symbol.
    private mutating func drawFinderPatterns() {
        for (cx, cy) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 {
                    let x = cx + dx, y = cy + dy
                    guard x >= 0, y >= 0, x < size, y < size else { continue }
                    let ring = max(abs(dx), abs(dy))
                    setFunction(x, y, ring != 2 && ring != 4)
                }
            }
        }
    }

    /// ISO/IEC 18004 §6.3.6 alignment patterns (5×5: dark ring, light ring,
    /// dark centre) at every pair of Table E.1 coordinates, except where
    /// they would overlap a finder pattern.
    private mutating func drawAlignmentPatterns() {
        let centers = QRTables.alignmentCenters[version - 1]
        guard let first = centers.first, let last = centers.last else { return }
        for cy in centers {
            for cx in centers {
                if (cx == first && cy == first) || (cx == first && cy == last) || (cx == last && cy == first) {
                    continue
                }
                for dy in -2...2 {
                    for dx in -2...2 {
                        setFunction(cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1)
                    }
                }
            }
        }
    }

    /// Places the 15 format bits (bit 14 = most significant) in both copies
    /// (ISO/IEC 18004 §7.9.1, Figure 25) plus the dark module at
    /// (8, size − 8) (§7.9.1: "always dark").
    mutating func drawFormatBits(_ bits: Int) {
        func bit(_ i: Int) -> Bool { (bits >> i) & 1 == 1 }
        // Copy 1, around the top-left finder: bits 0–7 down column 8
        // (skipping the timing row 6), bits 8–14 leftwards along row 8
        // (skipping the timing column 6).
        for i in 0...5 { setFunction(8, i, bit(i)) }
        setFunction(8, 7, bit(6))
        setFunction(8, 8, bit(7))
        setFunction(7, 8, bit(8))
        for i in 9...14 { setFunction(14 - i, 8, bit(i)) }
        // Copy 2: bits 0–7 along row 8 from the right edge leftwards (below
        // the top-right finder), bits 8–14 down column 8 (right of the
        // bottom-left finder).
        for i in 0...7 { setFunction(size - 1 - i, 8, bit(i)) }
        for i in 8...14 { setFunction(8, size - 15 + i, bit(i)) }
        setFunction(8, size - 8, true)
    }

    /// ISO/IEC 18004 §7.10: versions ≥ 7 carry 18 version bits in two 6×3
    /// blocks, above the bottom-left finder and left of the top-right finder.
    /// Bit i sits at (size − 11 + i % 3, i / 3) and at its transpose.
    private mutating func drawVersionInformation() {
        guard version >= 7 else { return }
        let bits = QRTables.versionBits(version)
        for i in 0..<18 {
            let dark = (bits >> i) & 1 == 1
            let a = size - 11 + i % 3, b = i / 3
            setFunction(a, b, dark)
            setFunction(b, a, dark)
        }
    }

    // MARK: Codewords

    /// ISO/IEC 18004 §7.7.3: codeword bits (most significant first) fill the
    /// non-function modules in two-module-wide columns, starting at the
    /// bottom-right, moving up, then down, alternately, right module before
    /// left; the vertical timing column (x = 6) is skipped entirely.
    /// Modules left over after the last bit are the remainder bits (§7.6),
    /// which stay 0 (light) before masking.
    mutating func placeCodewords(_ codewords: [UInt8]) {
        let totalBits = codewords.count * 8
        var bitIndex = 0
        var upward = true
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for x in [right, right - 1] where !isFunction[y * size + x] {
                    if bitIndex < totalBits {
                        let byte = codewords[bitIndex >> 3]
                        modules[y * size + x] = (byte >> (7 - UInt8(bitIndex & 7))) & 1 == 1
                        bitIndex += 1
                    }
                }
            }
            upward.toggle()
            right -= 2
        }
    }

    // MARK: Masking

    /// The data mask condition of ISO/IEC 18004 §7.8.2, Table 10, with
    /// i = row (y) and j = column (x). Where true, the module is inverted.
    static func maskCondition(_ mask: Int, x j: Int, y i: Int) -> Bool {
        switch mask {
        case 0: return (i + j) % 2 == 0
        case 1: return i % 2 == 0
        case 2: return j % 3 == 0
        case 3: return (i + j) % 3 == 0
        case 4: return (i / 2 + j / 3) % 2 == 0
        case 5: return (i * j) % 2 + (i * j) % 3 == 0
        case 6: return ((i * j) % 2 + (i * j) % 3) % 2 == 0
        default: return ((i + j) % 2 + (i * j) % 3) % 2 == 0
        }
    }

    /// XORs the mask pattern over every non-function module (§7.8.2).
    mutating func applyMask(_ mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] && QRMatrix.maskCondition(mask, x: x, y: y) {
                modules[y * size + x].toggle()
            }
        }
    }

    // MARK: Penalty (ISO/IEC 18004 §7.8.3.1, Table 11)

    static let penaltyN1 = 3
    static let penaltyN2 = 3
    static let penaltyN3 = 40
    static let penaltyN4 = 10

    /// Total penalty score of the whole symbol, the sum of the four rules.
    func penalty() -> Int {
        penaltyAdjacent() + penaltyBlocks() + penaltyFinderLike() + penaltyBalance()
    }

    /// Every row and then every column as (index of first module, stride).
    private var lines: [(start: Int, step: Int)] {
        (0..<size).map { ($0 * size, 1) } + (0..<size).map { ($0, size) }
    }

    /// §7.8.3.1 penalty N1: in each row and column, a run of 5 + i
    /// same-coloured adjacent modules scores N1 + i (N1 = 3).
    func penaltyAdjacent() -> Int {
        var score = 0
        for (start, step) in lines {
            var runColor = modules[start]
            var runLength = 1
            for k in 1..<size {
                let module = modules[start + k * step]
                if module == runColor {
                    runLength += 1
                } else {
                    if runLength >= 5 { score += QRMatrix.penaltyN1 + runLength - 5 }
                    runColor = module
                    runLength = 1
                }
            }
            if runLength >= 5 { score += QRMatrix.penaltyN1 + runLength - 5 }
        }
        return score
    }

    /// §7.8.3.1 penalty N2: a block of m × n same-coloured modules scores
    /// N2 × (m − 1) × (n − 1) (N2 = 3), counted as N2 per 2×2 same-coloured
    /// square (overlapping squares each count).
    func penaltyBlocks() -> Int {
        guard size >= 2 else { return 0 }
        var score = 0
        for y in 0..<(size - 1) {
            for x in 0..<(size - 1) {
                let c = modules[y * size + x]
                if modules[y * size + x + 1] == c && modules[(y + 1) * size + x] == c
                    && modules[(y + 1) * size + x + 1] == c {
                    score += QRMatrix.penaltyN2
                }
            }
        }
        return score
    }

    /// §7.8.3.1 penalty N3: each 1:1:3:1:1 (dark:light:dark:light:dark)
    /// pattern in a row or column that is preceded or followed by 4 light
    /// modules scores N3 = 40. Only modules inside the symbol are examined;
    /// a pattern with light space on both sides counts once.
    func penaltyFinderLike() -> Int {
        guard size >= 11 else { return 0 }
        let core: [Bool] = [true, false, true, true, true, false, true]
        var score = 0
        for (start, step) in lines {
            func module(_ k: Int) -> Bool { modules[start + k * step] }
            func allLight(_ range: Range<Int>) -> Bool {
                for k in range where module(k) { return false }
                return true
            }
            for first in 0...(size - 7) {
                var matches = true
                for k in 0..<7 where module(first + k) != core[k] {
                    matches = false
                    break
                }
                guard matches else { continue }
                let lightBefore = first >= 4 && allLight((first - 4)..<first)
                let lightAfter = first + 11 <= size && allLight((first + 7)..<(first + 11))
                if lightBefore || lightAfter { score += QRMatrix.penaltyN3 }
            }
        }
        return score
    }

    /// §7.8.3.1 penalty N4: a dark proportion of 50 ± (5 × k)% to
    /// 50 ± (5 × (k + 1))% scores N4 × k (N4 = 10).
    func penaltyBalance() -> Int {
        let total = size * size
        guard total > 0 else { return 0 }
        let dark = modules.reduce(0) { $0 + ($1 ? 1 : 0) }
        // |dark/total − 1/2| / 5% = |20·dark − 10·total| / total, floored.
        let k = abs(20 * dark - 10 * total) / total
        return QRMatrix.penaltyN4 * k
    }
}
