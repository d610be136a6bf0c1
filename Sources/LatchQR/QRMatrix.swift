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

    /// XORs the mask pattern over every non-function module (§7.8.2); each mask's loop is written out so that no
    /// module pays for choosing the condition (the conditions are ``maskCondition(_:x:y:)``'s).
    mutating func applyMask(_ mask: Int) {
        let size = size
        isFunction.withUnsafeBufferPointer { function in
            modules.withUnsafeMutableBufferPointer { grid in
                @inline(__always) func each(_ condition: (Int, Int) -> Bool) {
                    for y in 0..<size {
                        let row = y * size
                        for x in 0..<size where !function[row + x] && condition(x, y) { grid[row + x].toggle() }
                    }
                }
                switch mask {
                case 0: each { x, y in (x + y) & 1 == 0 }
                case 1: each { _, y in y & 1 == 0 }
                case 2: each { x, _ in x % 3 == 0 }
                case 3: each { x, y in (x + y) % 3 == 0 }
                case 4: each { x, y in ((y >> 1) + x / 3) & 1 == 0 }
                case 5: each { x, y in (x * y) & 1 + (x * y) % 3 == 0 }
                case 6: each { x, y in ((x * y) & 1 + (x * y) % 3) & 1 == 0 }
                default: each { x, y in (((x + y) & 1) + (x * y) % 3) & 1 == 0 }
                }
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
    /// Runs `body` once per row and once per column with the line's start index and step in `modules` (row-major).
    private func forEachLine(_ body: (_ start: Int, _ step: Int) -> Void) {
        for index in 0..<size {
            body(index * size, 1)
            body(index, size)
        }
    }

    /// §7.8.3.1 penalty N1: in each row and column, a run of 5 + i
    /// same-coloured adjacent modules scores N1 + i (N1 = 3).
    func penaltyAdjacent() -> Int {
        let size = size
        return modules.withUnsafeBufferPointer { grid in
            var score = 0
            forEachLine { start, step in
                var runColor = grid[start]
                var runLength = 1
                var index = start + step
                for _ in 1..<size {
                    let module = grid[index]
                    if module == runColor {
                        runLength += 1
                    } else {
                        if runLength >= 5 { score += QRMatrix.penaltyN1 + runLength - 5 }
                        runColor = module
                        runLength = 1
                    }
                    index += step
                }
                if runLength >= 5 { score += QRMatrix.penaltyN1 + runLength - 5 }
            }
            return score
        }
    }

    /// §7.8.3.1 penalty N2: a block of m × n same-coloured modules scores
    /// N2 × (m − 1) × (n − 1), counted as every 2 × 2 block of one colour
    /// (overlapping blocks each count, which sums to the same).
    func penaltyBlocks() -> Int {
        guard size >= 2 else { return 0 }
        let size = size
        return modules.withUnsafeBufferPointer { grid in
            var score = 0
            for y in 0..<(size - 1) {
                let row = y * size
                for x in 0..<(size - 1) {
                    let c = grid[row + x]
                    if grid[row + x + 1] == c && grid[row + size + x] == c && grid[row + size + x + 1] == c {
                        score += QRMatrix.penaltyN2
                    }
                }
            }
            return score
        }
    }

    /// §7.8.3.1 penalty N3: each 1:1:3:1:1 (dark:light:dark:light:dark)
    /// pattern in a row or column with four light modules on at least one
    /// side (inside the symbol) scores N3 (40). A line's modules are read as
    /// bits, so a window of eleven is one comparison.
    func penaltyFinderLike() -> Int {
        guard size >= 11 else { return 0 }
        let size = size
        // dark light dark dark dark light dark, then or preceded by four light: as bits, most recent last.
        let core: UInt32 = 0b1011101
        return modules.withUnsafeBufferPointer { grid in
            var score = 0
            forEachLine { start, step in
                // bits holds the last eleven modules read (bit 0 = the latest).
                var bits: UInt32 = 0
                var index = start
                for position in 0..<size {
                    bits = ((bits << 1) | (grid[index] ? 1 : 0)) & 0x7FF
                    index += step
                    // The core ends at `position`: modules position-6 ... position.
                    guard position >= 6, bits & 0x7F == core else { continue }
                    let first = position - 6
                    let lightBefore = first >= 4 && (bits >> 7) & 0xF == 0
                    var lightAfter = false
                    if first + 11 <= size {
                        lightAfter = true
                        for k in (first + 7)..<(first + 11) where grid[start + k * step] {
                            lightAfter = false
                            break
                        }
                    }
                    if lightBefore || lightAfter { score += QRMatrix.penaltyN3 }
                }
            }
            return score
        }
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

// MARK: Bit-parallel penalty

/// A row or column of up to 192 modules as bits (bit i = module i), in three words.
struct QRLine {
    var words: (UInt64, UInt64, UInt64) = (0, 0, 0)

    subscript(bit: Int) -> Bool {
        get {
            let word = bit < 64 ? words.0 : bit < 128 ? words.1 : words.2
            return (word >> UInt64(bit & 63)) & 1 == 1
        }
    }

    mutating func set(_ bit: Int) {
        let mask = UInt64(1) << UInt64(bit & 63)
        switch bit >> 6 {
        case 0: words.0 |= mask
        case 1: words.1 |= mask
        default: words.2 |= mask
        }
    }

    /// Bit i of the result is bit i + k of this line (0 past the end).
    func down(_ k: Int) -> QRLine {
        guard k > 0 else { return self }
        let (a, b, c) = words
        let s = UInt64(k)
        return QRLine(words: ((a >> s) | (b << (64 - s)), (b >> s) | (c << (64 - s)), c >> s))
    }

    /// Bit i of the result is bit i − k of this line (0 before the start).
    func up(_ k: Int) -> QRLine {
        guard k > 0 else { return self }
        let (a, b, c) = words
        let s = UInt64(k)
        return QRLine(words: (a << s, (b << s) | (a >> (64 - s)), (c << s) | (b >> (64 - s))))
    }

    static func & (l: QRLine, r: QRLine) -> QRLine { QRLine(words: (l.words.0 & r.words.0, l.words.1 & r.words.1, l.words.2 & r.words.2)) }
    static func | (l: QRLine, r: QRLine) -> QRLine { QRLine(words: (l.words.0 | r.words.0, l.words.1 | r.words.1, l.words.2 | r.words.2)) }
    static func ^ (l: QRLine, r: QRLine) -> QRLine { QRLine(words: (l.words.0 ^ r.words.0, l.words.1 ^ r.words.1, l.words.2 ^ r.words.2)) }

    var popCount: Int { words.0.nonzeroBitCount + words.1.nonzeroBitCount + words.2.nonzeroBitCount }
}

extension QRMatrix {
    /// N1 of one line of `size` modules whose colour changes after each set bit of `changes`.
    static func runPenalty(changes: QRLine, size: Int) -> Int {
        var score = 0
        var runStart = 0
        for (offset, word) in [changes.words.0, changes.words.1, changes.words.2].enumerated() {
            var remaining = word
            while remaining != 0 {
                let end = offset * 64 + remaining.trailingZeroBitCount  // the run's last module
                let length = end - runStart + 1
                if length >= 5 { score += penaltyN1 + length - 5 }
                runStart = end + 1
                remaining &= remaining - 1
            }
        }
        let last = size - runStart
        if last >= 5 { score += penaltyN1 + last - 5 }
        return score
    }

    /// The symbol's rows and columns as bit lines (dark = 1), and the line of `size` ones.
    func bitLines() -> (rows: [QRLine], columns: [QRLine], full: QRLine) {
        let size = size
        var rows = [QRLine](repeating: QRLine(), count: size)
        var columnWords = [UInt64](repeating: 0, count: size * 3)
        var full = QRLine()
        for index in 0..<size { full.set(index) }
        modules.withUnsafeBufferPointer { grid in
            columnWords.withUnsafeMutableBufferPointer { columns in
                for y in 0..<size {
                    var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
                    let yWord = y >> 6
                    let yBit = UInt64(1) << UInt64(y & 63)
                    let row = y * size
                    for x in 0..<size where grid[row + x] {
                        let bit = UInt64(1) << UInt64(x & 63)
                        switch x >> 6 {
                        case 0: words.0 |= bit
                        case 1: words.1 |= bit
                        default: words.2 |= bit
                        }
                        columns[x * 3 + yWord] |= yBit
                    }
                    rows[y] = QRLine(words: words)
                }
            }
        }
        let columns = (0..<size).map { QRLine(words: (columnWords[$0 * 3], columnWords[$0 * 3 + 1], columnWords[$0 * 3 + 2])) }
        return (rows, columns, full)
    }

    /// ``penalty()`` computed on bit lines, with the same result: N3 and N2 as whole-line bit operations, N1 by
    /// walking the colour changes only.
    func fastPenalty() -> Int {
        guard size >= 11 else { return penalty() }
        let (rows, columns, full) = bitLines()
        var score = 0
        var dark = 0
        for lines in [rows, columns] {
            for line in lines {
                let light = line ^ full
                // N1: runs of 5 + i, from the positions where the colour changes (bit i: module i ≠ module i + 1).
                score += QRMatrix.runPenalty(changes: (line ^ line.down(1)) & full.down(1), size: size)
                // N3: 1011101 starting at i, with four light modules before (i−4…i−1) or after (i+7…i+10), inside.
                let core = line & light.down(1) & line.down(2) & line.down(3) & line.down(4) & light.down(5) & line.down(6)
                let before = light.up(1) & light.up(2) & light.up(3) & light.up(4)
                let after = light.down(7) & light.down(8) & light.down(9) & light.down(10)
                score += QRMatrix.penaltyN3 * (core & (before | after)).popCount
            }
        }
        // N2: 2 × 2 blocks of one colour; N4: balance.
        for y in 0..<size {
            dark += rows[y].popCount
            guard y + 1 < size else { continue }
            let a = rows[y], b = rows[y + 1]
            let same = (a ^ b ^ full) & (a ^ a.down(1) ^ full) & (b ^ b.down(1) ^ full)
            // Bit x says the block at columns x, x+1 is one colour; x = size − 1 has no block.
            score += QRMatrix.penaltyN2 * (same & full.down(1)).popCount
        }
        let total = size * size
        score += QRMatrix.penaltyN4 * (abs(20 * dark - 10 * total) / total)
        return score
    }
}
