// Writing to Git: one commit on a bot branch, built on the fetched remote tip, pushed without force.
export { BranchWriter, type GitAuthor, type WriteRequest, type WriteResult } from './branch-writer.js';
