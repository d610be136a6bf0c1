import Testing
@testable import LatchQR

@Suite("Reed–Solomon over GF(256)")
struct ReedSolomonTests {
    @Test("field tables: α^8 = 0x1D under 0x11D, α^255 = 1, log inverts exp")
    func fieldTables() {
        #expect(GF256.exp[0] == 1)
        #expect(GF256.exp[7] == 128)
        #expect(GF256.exp[8] == 0x1D)
        #expect(GF256.exp[25] == 3)
        #expect(GF256.exp[255] == 1)
        for a in 1...255 { #expect(GF256.exp[GF256.log[a]] == UInt8(a)) }
        // Every non-zero element appears exactly once in α^0...α^254.
        #expect(Set(GF256.exp[0..<255]).count == 255)
        #expect(GF256.multiply(0, 77) == 0)
        #expect(GF256.multiply(2, 128) == 0x1D)
    }

    /// Generator polynomials as tabulated in ISO/IEC 18004 Annex A, given as
    /// exponents of α, highest power first.
    @Test("generator polynomials of degree 7 and 10 match Annex A", arguments: [
        (7, [0, 87, 229, 146, 149, 238, 102, 21]),
        (10, [0, 251, 67, 46, 61, 118, 70, 64, 94, 32, 45]),
    ])
    func generators(degree: Int, exponents: [Int]) {
        let gen = ReedSolomon.generator(degree: degree)
        #expect(gen.map { GF256.log[Int($0)] } == exponents)
    }

    @Test("ISO/IEC 18004 Annex I: \"01234567\" 1-M")
    func annexExample() {
        let data: [UInt8] = [0x10, 0x20, 0x0C, 0x56, 0x61, 0x80, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11]
        let expected: [UInt8] = [0xA5, 0x24, 0xD4, 0xC1, 0xED, 0x36, 0xC7, 0x87, 0x2C, 0x55]
        #expect(ReedSolomon.errorCorrection(for: data, degree: 10) == expected)
    }

    @Test("Thonky tutorial: \"HELLO WORLD\" 1-M")
    func helloWorld() {
        let data: [UInt8] = [32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236, 17, 236, 17]
        let expected: [UInt8] = [196, 35, 39, 119, 235, 215, 231, 226, 93, 23]
        #expect(ReedSolomon.errorCorrection(for: data, degree: 10) == expected)
    }

    @Test("Thonky tutorial: 5-Q blocks (18 EC codewords)", arguments: [
        ([67, 85, 70, 134, 87, 38, 85, 194, 119, 50, 6, 18, 6, 103, 38] as [UInt8],
         [213, 199, 11, 45, 115, 247, 241, 223, 229, 248, 154, 117, 154, 111, 86, 161, 111, 39] as [UInt8]),
        ([246, 246, 66, 7, 118, 134, 242, 7, 38, 86, 22, 198, 199, 146, 6],
         [87, 204, 96, 60, 202, 182, 124, 157, 200, 134, 27, 129, 209, 17, 163, 163, 120, 133]),
        ([182, 230, 247, 119, 50, 7, 118, 134, 87, 38, 82, 6, 134, 151, 50, 7],
         [148, 116, 177, 212, 76, 133, 75, 242, 238, 76, 195, 230, 189, 10, 108, 240, 192, 141]),
    ])
    func fiveQ(data: [UInt8], expected: [UInt8]) {
        #expect(ReedSolomon.errorCorrection(for: data, degree: 18) == expected)
    }

    /// A valid codeword c(x) = data·x^n + remainder has roots α^0…α^(n−1):
    /// all n syndromes are zero. Checked for random blocks of every EC
    /// length the standard uses.
    @Test("syndromes of data + EC are zero (bounded random blocks)")
    func syndromes() {
        var rng = SeededGenerator(seed: 0x5EED)
        let degrees = [7, 10, 13, 15, 16, 17, 18, 20, 22, 24, 26, 28, 30]
        for degree in degrees {
            for _ in 0..<8 {
                let data = Payloads.randomBytes(Int(rng.next() % 120) + 1, rng: &rng)
                let codeword = data + ReedSolomon.errorCorrection(for: data, degree: degree)
                for i in 0..<degree {
                    var value: UInt8 = 0  // Horner evaluation at α^i
                    for c in codeword { value = GF256.multiply(value, GF256.exp[i]) ^ c }
                    #expect(value == 0, "degree \(degree), root α^\(i)")
                }
            }
        }
    }
}
