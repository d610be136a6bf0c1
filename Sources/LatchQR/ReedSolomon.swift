// Reed–Solomon error correction for QR Code symbols.
//
// ISO/IEC 18004:2015 §7.5.2: the error correction codewords of a block are the
// remainder of the data polynomial (times x^n) divided by the generator
// polynomial g(x) = (x − α^0)(x − α^1)…(x − α^(n−1)), computed in GF(2^8)
// with the primitive polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D), α = 2.
// Annex A of the standard lists the generator polynomials; we compute them.

/// Arithmetic in GF(256) with the QR field polynomial 0x11D.
enum GF256 {
    /// exp[i] = α^i for i in 0..<510 (doubled so `exp[log a + log b]` needs no modulo).
    static let exp: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 510)
        var value = 1
        for i in 0..<255 {
            table[i] = UInt8(value)
            table[i + 255] = UInt8(value)
            value <<= 1
            if value & 0x100 != 0 { value ^= 0x11D }
        }
        return table
    }()

    /// log[a] = i such that α^i = a, for a in 1...255 (log[0] is unused).
    static let log: [Int] = {
        var table = [Int](repeating: 0, count: 256)
        for i in 0..<255 { table[Int(exp[i])] = i }
        return table
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        if a == 0 || b == 0 { return 0 }
        return exp[log[Int(a)] + log[Int(b)]]
    }
}

enum ReedSolomon {
    /// Coefficients of g(x) of the given degree, highest power first; the
    /// leading coefficient (always 1) is included, so the result has
    /// `degree + 1` entries.
    static func generator(degree: Int) -> [UInt8] {
        var poly: [UInt8] = [1]
        for i in 0..<max(0, degree) {
            // Multiply by (x + α^i); in GF(2^8) subtraction is addition (XOR).
            let root = GF256.exp[i]
            var next = [UInt8](repeating: 0, count: poly.count + 1)
            for (j, coefficient) in poly.enumerated() {
                next[j] ^= coefficient
                next[j + 1] ^= GF256.multiply(coefficient, root)
            }
            poly = next
        }
        return poly
    }

    /// The `degree` error correction codewords for `data` (ISO/IEC 18004 §7.5.2).
    static func errorCorrection(for data: [UInt8], degree: Int) -> [UInt8] {
        guard degree > 0 else { return [] }
        let gen = generator(degree: degree)
        // Polynomial long division of data(x)·x^degree by g(x), keeping only
        // the running remainder (a shift register of `degree` codewords).
        var remainder = [UInt8](repeating: 0, count: degree)
        for byte in data {
            let factor = byte ^ remainder[0]
            for j in 0..<(degree - 1) {
                remainder[j] = remainder[j + 1] ^ GF256.multiply(gen[j + 1], factor)
            }
            remainder[degree - 1] = GF256.multiply(gen[degree], factor)
        }
        return remainder
    }
}
