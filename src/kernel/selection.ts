import type { GraphQLResolveInfo } from 'graphql';

/**
 * Whether the operation selects nothing of a mutation's answer but `id` (and `__typename`): the
 * REST adapter's creation routes (201 with a Location, no body) select `{ id }` only. Such a
 * mutation may answer the id it wrote instead of re-reading the row after its commit (issue 22:
 * no re-reads on the hot paths). A fragment, or any other field, answers false.
 */
export function selectsOnlyId(info: Pick<GraphQLResolveInfo, 'fieldNodes'>): boolean {
  return info.fieldNodes.every(
    (node) =>
      node.selectionSet !== undefined &&
      node.selectionSet.selections.every((s) => s.kind === 'Field' && (s.name.value === 'id' || s.name.value === '__typename') && !s.directives?.length),
  );
}
