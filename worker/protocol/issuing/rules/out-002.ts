import { capCombiningRuns } from "../marks.js";
import { INSTRUCTION_PATTERN, PROMPT_INJECTION_THRESHOLD } from "../scopes.js";
import { allow, deny, outputText, regex, type OutputRule } from "./types.js";

/** Code points that render as nothing (zero-width and bidi marks, soft hyphen, word joiners, BOM, variation selectors, tags, …). */
const RENDERS_AS_NOTHING = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * The readings of an output the patterns are tried on: as written, and as read (NFKC, characters
 * that render as nothing removed), so a zero-width space inside a word (`ig\u200bnore`), a soft
 * hyphen or fullwidth letters (`ｉｇｎｏｒｅ`) do not hide a phrase the model reads plainly; and both
 * again with HTML character references decoded (`&nbsp;`, `&#32;`, `&lt;`), as a page shows them.
 */
function instructionReadings(text: string): string[] {
  // A run of marks is cut to the stream-safe bound before NFKC, whose reordering is quadratic in it (marks.ts).
  const fold = (t: string) => capCombiningRuns(t).normalize("NFKC").replace(RENDERS_AS_NOTHING, "");
  const readings = [text, fold(text)];
  // Fetched pages are HTML: `ignore&nbsp;all&nbsp;previous&nbsp;instructions` and `&lt;|im_start|&gt;` are
  // what a page shows as the phrase, and a model reading the markup reads them so.
  if (text.includes("&")) {
    const decoded = decodeCharacterReferences(text);
    if (decoded !== text) readings.push(decoded, fold(decoded));
  }
  return [...new Set(readings)];
}

/**
 * HTML's character references a phrase or role marker can be written in: numeric ones (any number of leading
 * zeros, as browsers read them), and every named one (HTML's table) whose character is whitespace, renders as
 * nothing (`&shy;`, `&ZeroWidthSpace;`, `&zwj;`) or reads as ASCII (`&LT;`, `&iopf;` 𝕚, `&Iscr;`, `&afr;`).
 * A name is read to its longest entry, so `&nbspx` reads as `&nbsp` and `x`.
 */
const CHARACTER_REFERENCE = /&(?:#0*(\d{1,7})|#[xX]0*([0-9a-fA-F]{1,6})|([A-Za-z][A-Za-z0-9]{0,31}));?/g;
// Generated from HTML's named character references (the WHATWG table): those whose character is whitespace, a
// default-ignorable code point, or NFKC-folds to ASCII (test: out-html-references.test.ts checks each entry's reading).
export const NAMED_REFERENCE: ReadonlyMap<string, string> = new Map(Object.entries({ AMP:"&",Afr:"\u{1d504}",Aopf:"\u{1d538}",ApplyFunction:"\u{2061}",Ascr:"\u{1d49c}",Bernoullis:"\u{212c}",Bfr:"\u{1d505}",Bopf:"\u{1d539}",Bscr:"\u{212c}",CapitalDifferentialD:"\u{2145}",Cayleys:"\u{212d}",Cfr:"\u{212d}",Colone:"\u{2a74}",Copf:"\u{2102}",Cscr:"\u{1d49e}",DD:"\u{2145}",Dfr:"\u{1d507}",DiacriticalGrave:"`",DifferentialD:"\u{2146}",Dopf:"\u{1d53b}",Dscr:"\u{1d49f}",Efr:"\u{1d508}",Eopf:"\u{1d53c}",Equal:"\u{2a75}",Escr:"\u{2130}",ExponentialE:"\u{2147}",Ffr:"\u{1d509}",Fopf:"\u{1d53d}",Fouriertrf:"\u{2131}",Fscr:"\u{2131}",GT:">",Gfr:"\u{1d50a}",Gopf:"\u{1d53e}",Gscr:"\u{1d4a2}",Hat:"^",Hfr:"\u{210c}",HilbertSpace:"\u{210b}",Hopf:"\u{210d}",Hscr:"\u{210b}",IJlig:"\u{132}",Ifr:"\u{2111}",Im:"\u{2111}",ImaginaryI:"\u{2148}",InvisibleComma:"\u{2063}",InvisibleTimes:"\u{2062}",Iopf:"\u{1d540}",Iscr:"\u{2110}",Jfr:"\u{1d50d}",Jopf:"\u{1d541}",Jscr:"\u{1d4a5}",Kfr:"\u{1d50e}",Kopf:"\u{1d542}",Kscr:"\u{1d4a6}",LT:"<",Laplacetrf:"\u{2112}",Lfr:"\u{1d50f}",Lopf:"\u{1d543}",Lscr:"\u{2112}",MediumSpace:"\u{205f}",Mellintrf:"\u{2133}",Mfr:"\u{1d510}",Mopf:"\u{1d544}",Mscr:"\u{2133}",NegativeMediumSpace:"\u{200b}",NegativeThickSpace:"\u{200b}",NegativeThinSpace:"\u{200b}",NegativeVeryThinSpace:"\u{200b}",NewLine:"\u{a}",Nfr:"\u{1d511}",NoBreak:"\u{2060}",NonBreakingSpace:"\u{a0}",Nopf:"\u{2115}",Nscr:"\u{1d4a9}",Ofr:"\u{1d512}",Oopf:"\u{1d546}",Oscr:"\u{1d4aa}",Pfr:"\u{1d513}",Poincareplane:"\u{210c}",Popf:"\u{2119}",Pscr:"\u{1d4ab}",QUOT:"\u{22}",Qfr:"\u{1d514}",Qopf:"\u{211a}",Qscr:"\u{1d4ac}",Re:"\u{211c}",Rfr:"\u{211c}",Ropf:"\u{211d}",Rscr:"\u{211b}",Sfr:"\u{1d516}",Sopf:"\u{1d54a}",Sscr:"\u{1d4ae}",TRADE:"\u{2122}",Tab:"\u{9}",Tfr:"\u{1d517}",ThickSpace:"\u{205f}\u{200a}",ThinSpace:"\u{2009}",Topf:"\u{1d54b}",Tscr:"\u{1d4af}",Ufr:"\u{1d518}",UnderBar:"_",Uopf:"\u{1d54c}",Uscr:"\u{1d4b0}",VerticalLine:"|",VeryThinSpace:"\u{200a}",Vfr:"\u{1d519}",Vopf:"\u{1d54d}",Vscr:"\u{1d4b1}",Wfr:"\u{1d51a}",Wopf:"\u{1d54e}",Wscr:"\u{1d4b2}",Xfr:"\u{1d51b}",Xopf:"\u{1d54f}",Xscr:"\u{1d4b3}",Yfr:"\u{1d51c}",Yopf:"\u{1d550}",Yscr:"\u{1d4b4}",ZeroWidthSpace:"\u{200b}",Zfr:"\u{2128}",Zopf:"\u{2124}",Zscr:"\u{1d4b5}",af:"\u{2061}",afr:"\u{1d51e}",amp:"&",aopf:"\u{1d552}",apos:"'",ascr:"\u{1d4b6}",ast:"*",bernou:"\u{212c}",bfr:"\u{1d51f}",bopf:"\u{1d553}",bscr:"\u{1d4b7}",bsol:"\u{5c}",cfr:"\u{1d520}",circledS:"\u{24c8}",colon:":",comma:",",commat:"@",complexes:"\u{2102}",copf:"\u{1d554}",cscr:"\u{1d4b8}",dd:"\u{2146}",dfr:"\u{1d521}",dollar:"$",dopf:"\u{1d555}",dscr:"\u{1d4b9}",ee:"\u{2147}",efr:"\u{1d522}",ell:"\u{2113}",emsp13:"\u{2004}",emsp14:"\u{2005}",emsp:"\u{2003}",ensp:"\u{2002}",eopf:"\u{1d556}",equals:"=",escr:"\u{212f}",excl:"!",expectation:"\u{2130}",exponentiale:"\u{2147}",ffilig:"\u{fb03}",fflig:"\u{fb00}",ffllig:"\u{fb04}",ffr:"\u{1d523}",filig:"\u{fb01}",fjlig:"fj",fllig:"\u{fb02}",fopf:"\u{1d557}",fscr:"\u{1d4bb}",gfr:"\u{1d524}",gopf:"\u{1d558}",grave:"`",gscr:"\u{210a}",gt:">",hairsp:"\u{200a}",hamilt:"\u{210b}",hellip:"\u{2026}",hfr:"\u{1d525}",hopf:"\u{1d559}",hscr:"\u{1d4bd}",ic:"\u{2063}",ifr:"\u{1d526}",ii:"\u{2148}",ijlig:"\u{133}",image:"\u{2111}",imagline:"\u{2110}",imagpart:"\u{2111}",incare:"\u{2105}",integers:"\u{2124}",iopf:"\u{1d55a}",iscr:"\u{1d4be}",it:"\u{2062}",jfr:"\u{1d527}",jopf:"\u{1d55b}",jscr:"\u{1d4bf}",kfr:"\u{1d528}",kopf:"\u{1d55c}",kscr:"\u{1d4c0}",lagran:"\u{2112}",lbrace:"{",lbrack:"[",lcub:"{",lfr:"\u{1d529}",lopf:"\u{1d55d}",lowbar:"_",lpar:"(",lrm:"\u{200e}",lscr:"\u{1d4c1}",lsqb:"[",lt:"<",mfr:"\u{1d52a}",midast:"*",mldr:"\u{2026}",mopf:"\u{1d55e}",mscr:"\u{1d4c2}",naturals:"\u{2115}",nbsp:"\u{a0}",nfr:"\u{1d52b}",nldr:"\u{2025}",nopf:"\u{1d55f}",nscr:"\u{1d4c3}",num:"#",numero:"\u{2116}",numsp:"\u{2007}",oS:"\u{24c8}",ofr:"\u{1d52c}",oopf:"\u{1d560}",order:"\u{2134}",orderof:"\u{2134}",ordf:"\u{aa}",ordm:"\u{ba}",oscr:"\u{2134}",percnt:"%",period:".",pfr:"\u{1d52d}",phmmat:"\u{2133}",planckh:"\u{210e}",plus:"+",popf:"\u{1d561}",primes:"\u{2119}",pscr:"\u{1d4c5}",puncsp:"\u{2008}",qfr:"\u{1d52e}",qopf:"\u{1d562}",qscr:"\u{1d4c6}",quaternions:"\u{210d}",quest:"?",quot:"\u{22}",rationals:"\u{211a}",rbrace:"}",rbrack:"]",rcub:"}",real:"\u{211c}",realine:"\u{211b}",realpart:"\u{211c}",reals:"\u{211d}",rfr:"\u{1d52f}",rlm:"\u{200f}",ropf:"\u{1d563}",rpar:")",rscr:"\u{1d4c7}",rsqb:"]",semi:";",sfr:"\u{1d530}",shy:"\u{ad}",sol:"/",sopf:"\u{1d564}",sscr:"\u{1d4c8}",sup1:"\u{b9}",sup2:"\u{b2}",sup3:"\u{b3}",tfr:"\u{1d531}",thinsp:"\u{2009}",topf:"\u{1d565}",trade:"\u{2122}",tscr:"\u{1d4c9}",ufr:"\u{1d532}",uopf:"\u{1d566}",uscr:"\u{1d4ca}",verbar:"|",vert:"|",vfr:"\u{1d533}",vopf:"\u{1d567}",vscr:"\u{1d4cb}",wfr:"\u{1d534}",wopf:"\u{1d568}",wscr:"\u{1d4cc}",xfr:"\u{1d535}",xopf:"\u{1d569}",xscr:"\u{1d4cd}",yfr:"\u{1d536}",yopf:"\u{1d56a}",yscr:"\u{1d4ce}",zeetrf:"\u{2128}",zfr:"\u{1d537}",zopf:"\u{1d56b}",zscr:"\u{1d4cf}",zwj:"\u{200d}",zwnj:"\u{200c}" }));

/** `text` with its character references decoded once (a reference to no Unicode scalar value, or an unknown name, is kept as written). */
export function decodeCharacterReferences(text: string): string {
  return text.replace(CHARACTER_REFERENCE, (ref, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
    if (name !== undefined) {
      for (let n = name.length; n > 0; n--) {
        const value = NAMED_REFERENCE.get(name.slice(0, n));
        if (value !== undefined) return n === name.length ? value : value + ref.slice(1 + n);
      }
      return ref;
    }
    const cp = dec !== undefined ? parseInt(dec, 10) : hex !== undefined ? parseInt(hex, 16) : 0;
    return cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? ref : String.fromCodePoint(cp);
  });
}

/**
 * chat-role-marker's line form as deployed, and the same language written so that a backtracking
 * engine runs it in linear time. As deployed, `^\s*` (multiline) let every line start of a run of
 * blank lines scan the whole run (256 KiB of newlines: tens of seconds), and `\s*:?\s*$` split a run of
 * spaces after `system` both ways (quadratic in the run). A match whose leading `\s*` crosses a line
 * terminator is also a match from the line start after the last one crossed, so the leading
 * whitespace need not cross one; `:?` between two `\s*` accepts what `(?::\s*)?` after one does.
 */
export const ROLE_MARKER_LINE = "^\\s*#{2,}\\s*system\\s*:?\\s*$";
export const ROLE_MARKER_LINE_LINEAR = "^[^\\S\\n\\r\\u2028\\u2029]*#{2,}\\s*system\\s*(?::\\s*)?$";

/** The source a deployed instruction pattern is compiled from: the pattern, its role-marker line in the linear form. */
export const compiledInstructionSource = (pattern: string): string => pattern.split(ROLE_MARKER_LINE).join(ROLE_MARKER_LINE_LINEAR);

/** The instruction patterns `text` matches in any of its readings, by name (each counted once). */
export function instructionPatternsIn(text: string, onlySystemPrompt = false): string[] {
  const readings = instructionReadings(text);
  return INSTRUCTION_PATTERN.filter((p) => (!onlySystemPrompt || p.addresses_system_prompt) && readings.some((t) => regex(compiledInstructionSource(p.pattern), "im").test(t))).map((p) => p.name);
}

export const OUT_002: OutputRule = {
  name: "OUT-002",
  trigger: `the output text matches ${PROMPT_INJECTION_THRESHOLD} or more distinct INSTRUCTION_PATTERN entries`,
  scope: "output of any tool",
  judge({ output }) {
    const found = instructionPatternsIn(outputText(output.content));
    return found.length >= PROMPT_INJECTION_THRESHOLD ? deny(`OUT-002: prompt-injection pattern (${found.join(", ")})`) : allow();
  },
};
