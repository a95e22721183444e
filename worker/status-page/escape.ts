/** Text and attribute values for HTML and SVG: the five characters that could end a context, as entities. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
